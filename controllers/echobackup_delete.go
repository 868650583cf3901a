package controllers

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
)

// artifactDeleteBackoff is how long after a failed delete Job the next one
// starts.
const artifactDeleteBackoff = time.Minute

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

// releaseBackup removes the artifact finalizer: the EchoBackup may go.
func (r *EchoBackupReconciler) releaseBackup(ctx context.Context, b *echov1alpha1.EchoBackup) error {
	return ensureFinalizer(ctx, r.Client, b, echov1alpha1.ArtifactFinalizer, false)
}

// reconcileDelete deletes the artifact of an EchoBackup being deleted, at
// each of its copies and then in its own storage, then lets the EchoBackup
// go. A backup still running finishes first, so that what it stored is
// known; one that stored nothing goes at once; otherwise a delete Job per
// location removes the artifact, and is retried until it succeeds.
func (r *EchoBackupReconciler) reconcileDelete(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(b, echov1alpha1.ArtifactFinalizer) {
		return ctrl.Result{}, nil
	}
	if !wantsArtifactFinalizer(b) {
		// Not a finalizer this controller added: the policy retains the
		// artifact.
		return ctrl.Result{}, r.releaseBackup(ctx, b)
	}
	if !backupFinished(b) {
		if running, result, err := r.finishBeforeDelete(ctx, b); running || err != nil {
			return result, err
		}
	}
	if !artifactStored(b) {
		return ctrl.Result{}, r.releaseBackup(ctx, b)
	}
	// The copies go first (echobackup_copy_delete.go): the backup's own
	// artifact, deleted last, releases the EchoBackup.
	if done, result, err := r.deleteCopies(ctx, b); !done || err != nil {
		return result, err
	}

	if backupPruned(b) {
		// Pruned already (echobackup_prune.go): nothing left there.
		return ctrl.Result{}, r.releaseBackup(ctx, b)
	}
	return r.deleteArtifact(ctx, b, r.artifactDeleted)
}

// artifactDeleted lets the EchoBackup being deleted go once the delete
// Job removed its artifact, then removes the Job.
func (r *EchoBackupReconciler) artifactDeleted(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job) error {
	if err := r.releaseBackup(ctx, b); err != nil {
		return err
	}
	log.FromContext(ctx).Info("Deleted the backup's artifact", "location", b.Status.Location)
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonArtifactDeleted, "Deleted the artifact at %s", b.Status.Location)
	return removeJob(ctx, r.Client, job)
}

// deleteArtifact moves the deletion of the artifact in the backup's own
// storage on: a delete Job removes it, and is retried until it succeeds;
// then done records it.
func (r *EchoBackupReconciler) deleteArtifact(ctx context.Context, b *echov1alpha1.EchoBackup,
	done func(context.Context, *echov1alpha1.EchoBackup, *batchv1.Job) error) (ctrl.Result, error) {
	job, err := getOwnJob(ctx, r.Client, deleteWork(r.JobSigner, b), b.Status.Jobs, b.Namespace, deleteJobName(b))
	if refused, ok := asJobNotOwned(err); ok {
		return r.deleteJobNotOwned(ctx, b, refused)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.moveDeleteJobOn(ctx, b, job, func() (ctrl.Result, error) { return r.startDeleteJob(ctx, b) },
		func(job *batchv1.Job) error { return done(ctx, b, job) })
}

// moveDeleteJobOn moves one delete Job of b on, the artifact's or a
// copy's: with none, start creates it; one on its way out, a failed
// attempt, is waited for (its removal brings the next reconcile, which
// starts the next attempt); one that succeeded is done; one that failed is
// retried (retryDeleteJob).
func (r *EchoBackupReconciler) moveDeleteJobOn(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job,
	start func() (ctrl.Result, error), done func(*batchv1.Job) error) (ctrl.Result, error) {
	switch {
	case job == nil:
		return start()
	case !job.DeletionTimestamp.IsZero():
		return ctrl.Result{}, nil
	}
	if err := r.recordDeleteJob(ctx, b, job); err != nil {
		return ctrl.Result{}, err
	}
	out, err := readMoverJob(ctx, r.Client, r.APIReader, job, r.Clock.Now(), nil)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case out.outcome == moverSucceeded:
		return ctrl.Result{}, done(job)
	case out.outcome == moverFailed:
		return r.retryDeleteJob(ctx, b, job, out)
	}
	return ctrl.Result{}, nil
}

// finishBeforeDelete observes the Job of a backup being deleted before it
// finished, so that what it stored is known: running says the backup is
// still under way (its Job's end brings the next reconcile). A backup Job
// that the operator did not create for the backup fails the backup.
func (r *EchoBackupReconciler) finishBeforeDelete(ctx context.Context, b *echov1alpha1.EchoBackup) (running bool, _ ctrl.Result, _ error) {
	orig := b.DeepCopy()
	job, err := getOwnJob(ctx, r.Client, backupWork(r.JobSigner, b), b.Status.Jobs, b.Namespace, backupJobName(b))
	var result ctrl.Result
	switch refused, foreign := asJobNotOwned(err); {
	case foreign:
		r.failWith(b, echov1alpha1.ReasonJobNotOwned, echov1alpha1.EventReasonJobNotOwned, backupJobNotOwnedMessage(b, refused))
	case err != nil:
		return false, ctrl.Result{}, err
	case job != nil:
		recordJob(&b.Status.Jobs, job)
		result, err = r.observeJob(ctx, b, job)
	}
	if patchErr := r.patchStatus(ctx, orig, b); patchErr != nil {
		return false, ctrl.Result{}, patchErr
	}
	return job != nil, result, err
}

// recordDeleteJob records the delete Job taken by its signature when the
// status write that follows its creation was lost: from then on, its UID
// alone is taken under its name, and no copy of its signature.
func (r *EchoBackupReconciler) recordDeleteJob(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job) error {
	if recordedJob(b.Status.Jobs, job.Name) != nil {
		return nil
	}
	orig := b.DeepCopy()
	recordJob(&b.Status.Jobs, job)
	return r.patchStatus(ctx, orig, b)
}

// deleteJobNotOwned reports that the name of the backup's delete Job is
// taken by a Job the operator did not create for it, and looks again after
// artifactDeleteBackoff: once that Job is gone, the next attempt starts.
// The API server confirms it first: the cache may show the operator's new
// delete Job before the status that records it, whose update then brings
// the next reconcile.
func (r *EchoBackupReconciler) deleteJobNotOwned(ctx context.Context, b *echov1alpha1.EchoBackup, refused *jobNotOwned) (ctrl.Result, error) {
	fresh, job := &echov1alpha1.EchoBackup{}, &batchv1.Job{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(b), fresh); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: refused.name}, job); err != nil || ownJob(deleteWork(r.JobSigner, fresh), fresh.Status.Jobs, job) {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonJobNotOwned, "Could not delete the artifact at %s: %s", b.Status.Location,
		refused.message("EchoBackup "+b.Name, "the next attempt, every minute, then deletes the artifact; "+
			"or remove the finalizer of the EchoBackup to let it go and keep the artifact"))
	return ctrl.Result{RequeueAfter: artifactDeleteBackoff}, nil
}

// startDeleteJob creates the Job deleting the backup's artifact, once its
// storage Secrets are found opted in. In a namespace being deleted no Job
// can start, and the Secret and claim it would need are going too: the
// EchoBackup is then let go with its artifact left in place, rather than
// hold up the namespace for ever.
func (r *EchoBackupReconciler) startDeleteJob(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	storage, loc, err := resolveStorage(ctx, r.Client, r.APIReader, b.Namespace, b.Spec.Storage)
	if err == nil {
		err = storageOptedIn(ctx, r.APIReader, b.Namespace, storage, r.StorageEndpoints)
	}
	if err != nil {
		return r.deleteRefused(b, err)
	}
	job := deleteJob(b, storage, moverFor(r.MoverImage, r.MoverEnv, b.Spec.Mover, loc))
	orig := b.DeepCopy()
	created, err := createJob(ctx, r.Client, r.APIReader, deleteWork(r.JobSigner, b), &b.Status.Jobs, job)
	if refused, ok := asJobNotOwned(err); ok {
		return r.deleteJobNotOwned(ctx, b, refused)
	}
	switch {
	case err == nil && !created:
		// A stale cache: the Job's event brings the next reconcile.
		return ctrl.Result{}, nil
	case err == nil:
		log.FromContext(ctx).Info("Deleting the backup's artifact", "job", job.Name, "location", b.Status.Location)
		r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonDeletingArtifact, "Started Job %s to delete the artifact at %s", job.Name, b.Status.Location)
		return ctrl.Result{}, r.patchStatus(ctx, orig, b)
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The namespace refuses the Event too; the log keeps the location.
		log.FromContext(ctx).Info("Namespace being deleted: leaving the backup's artifact in place", "location", b.Status.Location)
		r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonArtifactRetained,
			"Namespace %s is being deleted, so no Job can delete the artifact: it is left at %s", b.Namespace, b.Status.Location)
		return ctrl.Result{}, r.releaseBackup(ctx, b)
	}
	return ctrl.Result{}, err
}

// deleteRefused reports a delete Job not created because a storage Secret
// is missing or has not opted in, or the location is gone (err), and looks again after
// artifactDeleteBackoff, as after a failed delete Job: Secrets are not
// watched, and the EchoBackup stays until its artifact is deleted or its
// finalizer removed by hand.
func (r *EchoBackupReconciler) deleteRefused(b *echov1alpha1.EchoBackup, err error) (ctrl.Result, error) {
	const then = "the next attempt, every minute, deletes the artifact"
	if refused, ok := asLocationUnavailable(err); ok {
		r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonArtifactDeleteFailed, "Could not delete the artifact at %s: %s; "+
			"or remove the finalizer of the EchoBackup to let it go and keep the artifact", b.Status.Location, refused.message(then))
		return ctrl.Result{RequeueAfter: artifactDeleteBackoff}, nil
	}
	if missing, ok := asSecretsNotFound(err); ok {
		r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonSecretNotFound, "Could not delete the artifact at %s: %s; "+
			"or remove the finalizer of the EchoBackup to let it go and keep the artifact", b.Status.Location, missing.message(then))
		return ctrl.Result{RequeueAfter: artifactDeleteBackoff}, nil
	}
	refused, ok := asOptInRefusal(err)
	if !ok {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(b, corev1.EventTypeWarning, refused.reason(), "Could not delete the artifact at %s: %s",
		b.Status.Location, refused.message(then, "remove the finalizer of the EchoBackup to let it go and keep the artifact"))
	return ctrl.Result{RequeueAfter: artifactDeleteBackoff}, nil
}

// retryDeleteJob reports a failed delete Job and, once the backoff has
// passed, deletes it; its removal brings the reconcile that starts the
// next one.
func (r *EchoBackupReconciler) retryDeleteJob(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job, out moverJobResult) (ctrl.Result, error) {
	reason := "the delete Job failed: " + out.jobMessage
	if out.failure != nil {
		reason = out.failure.Error
	}
	// The same message for every reconcile of one failure, so that its
	// Events are counted as one.
	r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonArtifactDeleteFailed,
		"Could not delete the artifact at %s, trying again %s after the failure: %s", b.Status.Location, artifactDeleteBackoff, truncateMessage(reason))
	if wait := retryWait(jobFinishTime(job), r.Clock.Now()); wait > 0 {
		return ctrl.Result{RequeueAfter: wait}, nil
	}
	deleted, err := removeJobOnce(ctx, r.Client, job)
	if deleted {
		// Counted once, by the reconcile that removes the failed Job.
		opmetrics.MoverFailed(opmetrics.MoverDelete, backupFailureReason(out.moverReason()))
	}
	return ctrl.Result{}, err
}

// retryWait is how long after a failure at failedAt the next attempt waits,
// at now.
func retryWait(failedAt, now time.Time) time.Duration {
	return max(0, artifactDeleteBackoff-now.Sub(failedAt))
}

// removeOrphanedDeleteJob removes the finished delete Job of an EchoBackup
// that is gone. An operator stopped between letting the EchoBackup go and
// removing the Job (which nothing owns) leaves it: it goes now, not at its
// TTL an hour later. Only a Job signed for the EchoBackup its annotation
// names goes: one a tenant made under that name is left alone, as is an
// unsigned one of an earlier version (its TTL removes it). A Job still
// running is left to finish (its end is watched), and the API server, not
// the cache, says the EchoBackup is gone.
func (r *EchoBackupReconciler) removeOrphanedDeleteJob(ctx context.Context, backup client.ObjectKey) error {
	job := &batchv1.Job{}
	name := deleteJobName(&echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Name: backup.Name}})
	if err := r.Get(ctx, client.ObjectKey{Namespace: backup.Namespace, Name: name}, job); err != nil || !job.DeletionTimestamp.IsZero() {
		return client.IgnoreNotFound(err)
	}
	gone := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{UID: types.UID(job.Annotations[echov1alpha1.BackupUIDAnnotation])}}
	if gone.UID == "" || !deleteWork(r.JobSigner, gone).signed(job) {
		return nil
	}
	if complete, failed := jobFinished(job); !complete && !failed {
		return nil
	}
	if err := r.APIReader.Get(ctx, backup, &echov1alpha1.EchoBackup{}); !apierrors.IsNotFound(err) {
		return err
	}
	return removeJob(ctx, r.Client, job)
}
