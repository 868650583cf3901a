package liveapi

import (
	"context"
	"fmt"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// requireOptedIn refuses a location that names, as its credentials or CA
// bundle, a Secret without echov1alpha1.StorageSecretLabel, before anything
// reads the Secret's data: a user who may create EchoBackupLocations but
// not read Secrets could otherwise have the operator send any Secret of the
// namespace (a database password) to an endpoint of theirs. It reads only
// the Secrets' metadata. A Secret that does not exist passes, for open to
// report as before.
func (l *locationListings) requireOptedIn(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) error {
	refused, err := storagesecrets.NotOptedIn(ctx, l.api, loc.Namespace, loc.Spec.S3.SecretNames())
	if err != nil || len(refused) == 0 {
		return err
	}
	name := refused[0]
	return fmt.Errorf("the Secret %q has no label %[2]s=true, which echo-operator requires before it reads a Secret as storage credentials or CA bundle: "+
		"if it holds this location's credentials or CA bundle, label it (kubectl label secret -n %[3]s %[4]s %[2]s=true); if not, name a Secret that has the label",
		name, echov1alpha1.StorageSecretLabel, loc.Namespace, name)
}
