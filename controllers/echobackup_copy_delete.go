package controllers

import (
	"context"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/names"
)

// The deletion of a backup's copies, with deletionPolicy Delete: before
// the artifact in the backup's own storage, a delete Job per copy that
// holds one removes it there, and the copy leaves status.copies; the
// finalizer stays until every location is empty.

// copyStopWait is how long a copy being deleted waits for its copy Job's
// removal before it looks again.
const copyStopWait = 2 * time.Second

// copyDeleteJobName is the name of the Job deleting the copy name of b.
func copyDeleteJobName(b *echov1alpha1.EchoBackup, name string) string {
	return names.Child(b.Name, "delete-"+name)
}

// copiesHolding are the copies whose storage may hold the artifact: those
// completed, and those whose Job may still write it.
func copiesHolding(b *echov1alpha1.EchoBackup) []string {
	var out []string
	for _, c := range b.Status.Copies {
		if c.Phase == echov1alpha1.PhaseCompleted || c.Phase == echov1alpha1.PhaseRunning {
			out = append(out, c.Name)
		}
	}
	return out
}

// deleteCopies deletes the artifact at each copy that may hold it, one
// delete Job per copy; done says none holds it any more.
func (r *EchoBackupReconciler) deleteCopies(ctx context.Context, b *echov1alpha1.EchoBackup) (done bool, _ ctrl.Result, _ error) {
	holding := copiesHolding(b)
	var result ctrl.Result
	for _, name := range holding {
		res, err := r.deleteCopy(ctx, b, name, r.copyDeleted)
		if err != nil {
			return false, ctrl.Result{}, err
		}
		if res.RequeueAfter > 0 && (result.RequeueAfter == 0 || res.RequeueAfter < result.RequeueAfter) {
			result = res
		}
	}
	return len(copiesHolding(b)) == 0, result, nil
}

// copyGone records that the copy name of b holds nothing any more, its
// delete Job being done.
type copyGone func(ctx context.Context, b *echov1alpha1.EchoBackup, name string, job *batchv1.Job) error

// deleteCopy moves the deletion of the copy name on: its copy Job is
// stopped first, then a delete Job removes the artifact from the copy's
// storage, and is retried until it succeeds; then done records it.
func (r *EchoBackupReconciler) deleteCopy(ctx context.Context, b *echov1alpha1.EchoBackup, name string, done copyGone) (ctrl.Result, error) {
	if stopping, err := r.stopCopyJob(ctx, b, name); stopping || err != nil {
		return ctrl.Result{RequeueAfter: copyStopWait}, err
	}
	jobName := copyDeleteJobName(b, name)
	job, err := getOwnJob(ctx, r.Client, deleteWork(r.JobSigner, b), b.Status.Jobs, b.Namespace, jobName)
	if refused, ok := asJobNotOwned(err); ok {
		r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonJobNotOwned, "Could not delete copy %s: %s", name,
			refused.message("EchoBackup "+b.Name, "the next attempt, every minute, then deletes the copy; "+
				"or remove the finalizer of the EchoBackup to let it go and keep the artifacts"))
		return ctrl.Result{RequeueAfter: artifactDeleteBackoff}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.moveDeleteJobOn(ctx, b, job, func() (ctrl.Result, error) { return r.startCopyDeleteJob(ctx, b, name) },
		func(job *batchv1.Job) error { return done(ctx, b, name, job) })
}

// stopCopyJob removes the copy's Job, so that it writes nothing after the
// copy's deletion; stopping says it is still there.
func (r *EchoBackupReconciler) stopCopyJob(ctx context.Context, b *echov1alpha1.EchoBackup, name string) (stopping bool, _ error) {
	jobName := copyJobName(b, name)
	if recordedJob(b.Status.Jobs, jobName) == nil {
		return false, nil
	}
	if err := removeOwnJob(ctx, r.Client, b.Namespace, b.Status.Jobs, jobName); err != nil {
		return false, err
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: jobName}, &batchv1.Job{})
	return err == nil, client.IgnoreNotFound(err)
}

// startCopyDeleteJob creates the Job deleting the copy name, once the
// copy's storage is resolved and what it names opted in.
func (r *EchoBackupReconciler) startCopyDeleteJob(ctx context.Context, b *echov1alpha1.EchoBackup, name string) (ctrl.Result, error) {
	i := slices.IndexFunc(b.Spec.CopyTo, func(c echov1alpha1.BackupCopy) bool { return c.Name == name })
	if i < 0 {
		// Not in the immutable spec: nothing tells where it is.
		return ctrl.Result{}, nil
	}
	storage, loc, err := resolveStorage(ctx, r.Client, r.APIReader, b.Namespace, b.Spec.CopyTo[i].Storage)
	if err == nil {
		err = storageOptedIn(ctx, r.APIReader, b.Namespace, storage, r.StorageEndpoints)
	}
	if err != nil {
		return r.deleteRefused(b, err)
	}
	job := deleteJobNamed(b, copyDeleteJobName(b, name), storage, moverFor(r.MoverImage, r.MoverEnv, b.Spec.Mover, loc))
	orig := b.DeepCopy()
	created, err := createJob(ctx, r.Client, r.APIReader, deleteWork(r.JobSigner, b), &b.Status.Jobs, job)
	if err != nil || !created {
		if _, ok := asJobNotOwned(err); ok {
			return ctrl.Result{RequeueAfter: artifactDeleteBackoff}, nil
		}
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("Deleting a copy of the backup", "job", job.Name, "copy", name)
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonDeletingArtifact, "Started Job %s to delete copy %s", job.Name, name)
	return ctrl.Result{}, r.patchStatus(ctx, orig, b)
}

// copyDeleted records that the copy name holds nothing any more: it leaves
// status.copies, then its delete Job goes.
func (r *EchoBackupReconciler) copyDeleted(ctx context.Context, b *echov1alpha1.EchoBackup, name string, job *batchv1.Job) error {
	orig := b.DeepCopy()
	var key string
	b.Status.Copies = slices.DeleteFunc(b.Status.Copies, func(c echov1alpha1.BackupCopyStatus) bool {
		if c.Name == name {
			key = c.Key
		}
		return c.Name == name
	})
	if err := r.patchStatus(ctx, orig, b); err != nil {
		return err
	}
	log.FromContext(ctx).Info("Deleted a copy of the backup", "copy", name, "location", key)
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonArtifactDeleted, "Deleted copy %s at %s", name, key)
	return removeJob(ctx, r.Client, job)
}
