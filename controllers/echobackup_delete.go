package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// ArtifactFinalizer holds an EchoBackup whose deletion policy is Delete
// until its artifact is deleted from the storage. The artifact lies outside
// the cluster, where no owner reference reaches: this is the only work the
// garbage collector cannot do, and the only finalizer.
const ArtifactFinalizer = "echo.dev/backup-artifact"

// artifactDeleteBackoff is how long after a failed delete Job the next one
// starts.
const artifactDeleteBackoff = time.Minute

// Event reasons of artifact deletion.
const (
	EventReasonDeletingArtifact     = "DeletingArtifact"
	EventReasonArtifactDeleted      = "ArtifactDeleted"
	EventReasonArtifactDeleteFailed = echov1alpha1.BackupReasonArtifactDeleteErr
	EventReasonArtifactRetained     = "ArtifactRetained"
)

// wantsArtifactFinalizer reports whether deleting the backup must delete
// its artifact first.
func wantsArtifactFinalizer(b *echov1alpha1.EchoBackup) bool {
	return b.Spec.DeletionPolicy == echov1alpha1.DeletionPolicyDelete
}

// artifactStored reports whether the backup stored an artifact. A failed
// backup has none of its own: what its key holds, if anything, is the
// leftover of an interrupted upload or another backup's artifact that made
// it fail (a backup never overwrites a manifest).
func artifactStored(b *echov1alpha1.EchoBackup) bool {
	return b.Status.Location != "" || meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete)
}

// addArtifactFinalizer adds the finalizer; the patch fails rather than
// overwrite finalizers added since b was read.
func (r *EchoBackupReconciler) addArtifactFinalizer(ctx context.Context, b *echov1alpha1.EchoBackup) error {
	orig := b.DeepCopy()
	controllerutil.AddFinalizer(b, ArtifactFinalizer)
	if err := r.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("adding the finalizer of EchoBackup %s: %w", b.Name, err)
	}
	return nil
}

func (r *EchoBackupReconciler) removeArtifactFinalizer(ctx context.Context, b *echov1alpha1.EchoBackup) error {
	orig := b.DeepCopy()
	controllerutil.RemoveFinalizer(b, ArtifactFinalizer)
	if err := r.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizer of EchoBackup %s: %w", b.Name, err)
	}
	return nil
}

// reconcileDelete deletes the artifact of an EchoBackup being deleted, then
// lets the EchoBackup go. A backup still running finishes first, so that
// what it stored is known; one that stored nothing goes at once; otherwise
// a delete Job removes the artifact, and is retried until it succeeds.
func (r *EchoBackupReconciler) reconcileDelete(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, ArtifactFinalizer) {
		return ctrl.Result{}, nil
	}
	if !wantsArtifactFinalizer(b) {
		// Not a finalizer this controller added: the policy retains the
		// artifact.
		return ctrl.Result{}, r.removeArtifactFinalizer(ctx, b)
	}
	if !backupFinished(b) {
		job := &batchv1.Job{}
		err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: backupJobName(b)}, job)
		if err == nil {
			// The Job is watched: its end brings the next reconcile.
			orig := b.DeepCopy()
			result, err := r.observeJob(ctx, b, job)
			if patchErr := r.patchStatus(ctx, orig, b); patchErr != nil {
				return ctrl.Result{}, patchErr
			}
			return result, err
		}
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("reading Job %s: %w", backupJobName(b), err)
		}
	}
	if !artifactStored(b) {
		return ctrl.Result{}, r.removeArtifactFinalizer(ctx, b)
	}

	job := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: deleteJobName(b)}, job)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, r.startDeleteJob(ctx, b)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("reading Job %s: %w", deleteJobName(b), err)
	case !job.DeletionTimestamp.IsZero():
		// A failed attempt on its way out: its removal brings the next
		// reconcile, which starts the next attempt.
		return ctrl.Result{}, nil
	case job.Annotations[BackupUIDAnnotation] != string(b.UID):
		// Left over from an earlier EchoBackup of the same name: it says
		// nothing of this one's artifact.
		return ctrl.Result{}, r.removeJob(ctx, job)
	}
	switch complete, failed := jobFinished(job); {
	case complete:
		if err := r.removeArtifactFinalizer(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
		log.FromContext(ctx).Info("Deleted the backup's artifact", "location", b.Status.Location)
		r.Recorder.Eventf(b, corev1.EventTypeNormal, EventReasonArtifactDeleted, "Deleted the artifact at %s", b.Status.Location)
		return ctrl.Result{}, r.removeJob(ctx, job)
	case failed:
		return r.retryDeleteJob(ctx, b, job)
	}
	return ctrl.Result{}, nil
}

// startDeleteJob creates the Job deleting the backup's artifact. In a
// namespace being deleted no Job can start, and the Secret and claim it
// would need are going too: the EchoBackup is then let go with its
// artifact left in place, rather than hold up the namespace for ever.
func (r *EchoBackupReconciler) startDeleteJob(ctx context.Context, b *echov1alpha1.EchoBackup) error {
	job := deleteJob(b, r.MoverImage)
	err := r.Create(ctx, job)
	switch {
	case err == nil:
		log.FromContext(ctx).Info("Deleting the backup's artifact", "job", job.Name, "location", b.Status.Location)
		r.Recorder.Eventf(b, corev1.EventTypeNormal, EventReasonDeletingArtifact, "Started Job %s to delete the artifact at %s", job.Name, b.Status.Location)
		return nil
	case apierrors.IsAlreadyExists(err):
		// A stale cache: the Job's event brings the next reconcile.
		return nil
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace refuses the Event too; the log keeps the location.
		log.FromContext(ctx).Info("Namespace being deleted: leaving the backup's artifact in place", "location", b.Status.Location)
		r.Recorder.Eventf(b, corev1.EventTypeWarning, EventReasonArtifactRetained,
			"Namespace %s is being deleted, so no Job can delete the artifact: it is left at %s", b.Namespace, b.Status.Location)
		return r.removeArtifactFinalizer(ctx, b)
	}
	return fmt.Errorf("creating Job %s: %w", job.Name, err)
}

// retryDeleteJob reports a failed delete Job and, once the backoff has
// passed, deletes it; its removal brings the reconcile that starts the
// next one.
func (r *EchoBackupReconciler) retryDeleteJob(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job) (ctrl.Result, error) {
	reason := "the delete Job failed: " + jobFailureMessage(job)
	res, err := jobMoverResult(ctx, r.Client, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	if res != nil && res.Error != "" {
		reason = res.Error
	}
	// The same message for every reconcile of one failure, so that its
	// Events are counted as one.
	r.Recorder.Eventf(b, corev1.EventTypeWarning, EventReasonArtifactDeleteFailed,
		"Could not delete the artifact at %s, trying again %s after the failure: %s", b.Status.Location, artifactDeleteBackoff, truncateMessage(reason))
	if wait := retryWait(jobFinishTime(job), r.Clock.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	return ctrl.Result{}, r.removeJob(ctx, job)
}

// retryWait is how long after a failure at failedAt the next attempt waits,
// at now.
func retryWait(failedAt, now time.Time) time.Duration {
	return max(0, artifactDeleteBackoff-now.Sub(failedAt))
}

// removeJob deletes a Job and its pods (by default, deleting a Job through
// the API orphans its pods).
func (r *EchoBackupReconciler) removeJob(ctx context.Context, job *batchv1.Job) error {
	err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID})
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting Job %s: %w", job.Name, err)
	}
	return nil
}
