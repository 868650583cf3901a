package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// deleteFinishedJob removes the Job of a finished backup, and with it its
// pods: a pod that mounts a claim, finished or not, keeps the claim from
// being deleted, and the backup outlives its Echo. The outcome is in the
// backup's status by then.
func (r *EchoBackupReconciler) deleteFinishedJob(ctx context.Context, b *echov1alpha1.EchoBackup) error {
	return removeJob(ctx, r.Client, b.Namespace, backupJobName(b))
}

// removeJob deletes a Job and, in the background, its pods.
func removeJob(ctx context.Context, c client.Client, namespace, name string) error {
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !job.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := c.Delete(ctx, job, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the finished Job %s: %w", job.Name, err)
	}
	return nil
}
