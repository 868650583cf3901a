package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// The storage Secrets a data mover Job may be given: only those that opted
// in with echov1alpha1.StorageSecretLabel. A Job's pod reads whatever
// Secret of its namespace its environment and volumes name, so without
// this a user who may create EchoBackups but not read Secrets could name
// any Secret (a database password) as the S3 credentials of an endpoint
// of their own, and read it from the request's signature. Labelling a
// Secret takes the right to edit it.

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// secretsNotOptedIn refuses a data mover Job: Secrets of namespace that its
// storage names exist without the label.
type secretsNotOptedIn struct {
	namespace string
	secrets   []string
}

func (e *secretsNotOptedIn) Error() string { return e.message("", "") }

// message says which Secrets lack the label and how to fix it; then, when
// given, says what follows the label (the refused operation does not go
// on by itself), and otherwise what to do when the Secrets hold no storage
// credentials (by default, name one that does).
func (e *secretsNotOptedIn) message(then, otherwise string) string {
	quoted := make([]string, len(e.secrets))
	for i, s := range e.secrets {
		quoted[i] = fmt.Sprintf("%q", s)
	}
	subject, they, holds, them := "Secret "+quoted[0]+" has", "it", "holds", "it"
	if len(e.secrets) > 1 {
		subject, they, holds, them = "Secrets "+strings.Join(quoted, ", ")+" have", "they", "hold", "them"
	}
	fix := fmt.Sprintf("kubectl label secret -n %s %s %s=true", e.namespace, strings.Join(e.secrets, " "), echov1alpha1.StorageSecretLabel)
	if then != "" {
		fix += ", then " + then
	}
	if otherwise == "" {
		otherwise = "name a Secret that has the label"
	}
	return fmt.Sprintf("%s no label %s=true, which echo-operator requires before it gives a Secret to a data mover as storage credentials or CA bundle: "+
		"if %s %s this storage's credentials or CA bundle, label %s (%s); if not, %s",
		subject, echov1alpha1.StorageSecretLabel, they, holds, them, fix, otherwise)
}

// asSecretsNotOptedIn finds the refusal in err.
func asSecretsNotOptedIn(err error) (*secretsNotOptedIn, bool) {
	var refused *secretsNotOptedIn
	return refused, errors.As(err, &refused)
}

// storageSecretsOptedIn checks that every Secret storage names in namespace
// carries StorageSecretLabel: it fails with a *secretsNotOptedIn naming
// those that do not. It reads only the Secrets' metadata, from the API
// server (api): the operator neither caches Secrets nor reads their data
// for this. A Secret that does not exist passes, as before the label
// existed: the Job's pod cannot start without it, and the Job fails at its
// deadline.
func storageSecretsOptedIn(ctx context.Context, api client.Reader, namespace string, storage echov1alpha1.BackupStorage) error {
	refused, err := storagesecrets.NotOptedIn(ctx, api, namespace, storage.SecretNames())
	if err != nil {
		return err
	}
	if len(refused) > 0 {
		return &secretsNotOptedIn{namespace: namespace, secrets: refused}
	}
	return nil
}

// storageSecretsCheck is storageSecretsOptedIn as ensureOwnedJob's check
// before it creates a Job.
func storageSecretsCheck(api client.Reader, namespace string, storage echov1alpha1.BackupStorage) func(context.Context) error {
	return func(ctx context.Context) error {
		return storageSecretsOptedIn(ctx, api, namespace, storage)
	}
}
