package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Cache indexes that more than one controller reads.
const (
	// backupEchoField indexes EchoBackups by the Echo they back up.
	backupEchoField = ".spec.echoName"
	// scheduleEchoField indexes EchoBackupSchedules by the Echo they back up.
	scheduleEchoField = ".spec.template.echoName"
)

// IndexFields registers the cache indexes that more than one controller
// reads. The manager calls it once, before any controller's
// SetupWithManager; each controller registers the indexes only it reads.
func IndexFields(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &echov1alpha1.EchoBackup{}, backupEchoField, func(o client.Object) []string {
		return nonEmpty(o.(*echov1alpha1.EchoBackup).Spec.EchoName)
	}); err != nil {
		return fmt.Errorf("indexing EchoBackups by Echo: %w", err)
	}
	if err := indexer.IndexField(ctx, &echov1alpha1.EchoBackupSchedule{}, scheduleEchoField, func(o client.Object) []string {
		return nonEmpty(o.(*echov1alpha1.EchoBackupSchedule).Spec.Template.EchoName)
	}); err != nil {
		return fmt.Errorf("indexing EchoBackupSchedules by Echo: %w", err)
	}
	return nil
}
