package finalbackup

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/names"
)

// Wanted says whether the Echo's spec asks for a backup before it goes.
func Wanted(echo *echov1alpha1.Echo) bool {
	policy := echo.Spec.Backup
	return policy != nil && policy.BeforeDelete != nil &&
		policy.BeforeDelete.Enabled && policy.BeforeDelete.Storage != nil
}

// Name is the name of the Echo's final backup. It is unique to one Echo
// object: a later Echo of the same name gets its own.
func Name(echo *echov1alpha1.Echo) string {
	uid := string(echo.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return names.Child(echo.Name, "final-"+uid)
}

// Done says whether b is the Echo's final backup and has completed.
func Done(b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo) bool {
	return b.Name == Name(echo) && Foreign(b, echo) == "" &&
		meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete)
}

// Foreign says why b, found under the name of the Echo's final backup, is
// not the backup started for the Echo's deletion; empty when it is. Anyone
// who may create EchoBackups may create one of that name (it derives from
// the Echo's name and UID): one that backs up another Echo, or that was
// made before the deletion began, would pass off another Echo's data, or
// the data of that time, as the Echo's last state. What is checked is what
// the backup does, the Echo it backs up, and what the API server sets, its
// creation time (in seconds, as the deletion time).
func Foreign(b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo) string {
	switch {
	case b.Spec.EchoName != echo.Name:
		return fmt.Sprintf("it backs up Echo %s", b.Spec.EchoName)
	case b.Labels[echov1alpha1.FinalBackupOfLabel] != echo.Name:
		return fmt.Sprintf("it lacks the label %s=%s", echov1alpha1.FinalBackupOfLabel, echo.Name)
	case b.CreationTimestamp.Before(echo.DeletionTimestamp):
		return fmt.Sprintf("it was created at %s, before the Echo's deletion began", b.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	return ""
}

// Pending says whether the deletion of echo must wait for its final
// backup: it wants one, and that backup has not completed (it may not
// exist yet, be running, or have failed).
func Pending(ctx context.Context, r client.Reader, echo *echov1alpha1.Echo) (bool, error) {
	if !Wanted(echo) {
		return false, nil
	}
	b := &echov1alpha1.EchoBackup{}
	err := r.Get(ctx, client.ObjectKey{Namespace: echo.Namespace, Name: Name(echo)}, b)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading final backup %s/%s: %w", echo.Namespace, Name(echo), err)
	}
	return !Done(b, echo), nil
}

// EchoOf maps a final backup to its Echo (by FinalBackupOfLabel), so that
// the backup's progress reaches both sides of the contract; other
// EchoBackups map to nothing.
func EchoOf(_ context.Context, b client.Object) []reconcile.Request {
	name, ok := b.GetLabels()[echov1alpha1.FinalBackupOfLabel]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: b.GetNamespace(), Name: name}}}
}
