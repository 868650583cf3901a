package liveapi

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// optedInSecret reads the Secret name of loc's namespace, which holds the
// location's what, and checks the very object whose data the listing
// then uses (storagesecrets.Usable): it carries
// echov1alpha1.StorageSecretLabel and, when endpoint is given (an SSE-C
// key, which goes there with every request), lists it in
// echov1alpha1.StorageEndpointsAnnotation, unless the administrator's
// l.endpoints do. A user who may create
// EchoBackupLocations but not read Secrets could otherwise have the
// operator send any Secret of the namespace (a database password) to an
// endpoint of theirs; and a Secret checked, then read again, could have
// been replaced in between. A missing Secret, or one refused, is the
// location's error: nothing is asked of the storage.
func (l *locationListings) optedInSecret(ctx context.Context, loc *echov1alpha1.EchoBackupLocation, name, what, endpoint string) (*corev1.Secret, error) {
	secret := &corev1.Secret{}
	if err := l.api.Get(ctx, client.ObjectKey{Namespace: loc.Namespace, Name: name}, secret); err != nil {
		return nil, &locationError{fmt.Errorf("reading the %s Secret %s: %w", what, name, err)}
	}
	if err := storagesecrets.Usable(secret, endpoint, l.endpoints); err != nil {
		return nil, &locationError{err}
	}
	return secret, nil
}
