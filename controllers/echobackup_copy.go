package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/names"
)

// The copies of a completed EchoBackup (spec.copyTo): one Job per copy,
// reading the artifact from the backup's storage and writing it, verified
// against the backup's checksum, under the same key in the copy's storage.
// A copy's outcome goes to status.copies and the Copied condition; it
// never fails the backup.

const copyDeadline = int64(3600)

// copyJobName is the name of the Job copying b to its copy name.
func copyJobName(b *echov1alpha1.EchoBackup, name string) string {
	return names.CopyJob(b.Name, name)
}

// copyJob is the Job copying the artifact of b from storage from to the
// copy's storage to, both resolved (resolveStorage). It runs as the one
// ServiceAccount either side's identity names (reconcileCopy refuses two).
func copyJob(b *echov1alpha1.EchoBackup, name string, from, to echov1alpha1.BackupStorage, m moverSettings) *batchv1.Job {
	args := []string{
		moverprotocol.Arg(moverprotocol.FlagKey, artifactKey(b)),
		moverprotocol.Arg(moverprotocol.FlagChecksum, b.Status.Checksum),
	}
	dst := storageMountAs(to, destinationSide)
	pod := moverPod(m, moverprotocol.Copy, args, from, dst.volumes, dst.mounts, dataMoverResources)
	c := &pod.Containers[0]
	c.Args = append(c.Args, dst.args...)
	c.Env = append(c.Env, dst.env...)
	if pod.ServiceAccountName == "" {
		pod.ServiceAccountName = dst.serviceAccount
	}
	return moverJob(m, b.Namespace, copyJobName(b, name), backupLabels(b), copyDeadline, pod)
}

// identityConflict says, when the two storages use identities of two
// different ServiceAccounts, what to fix: a pod runs as one.
func identityConflict(from, to echov1alpha1.BackupStorage) string {
	a, b := from.S3.ServiceAccountName(), to.S3.ServiceAccountName()
	if a == "" || b == "" || a == b {
		return ""
	}
	return fmt.Sprintf("the backup's storage uses the identity of ServiceAccount %q and the copy's that of %q, "+
		"but a copy's Job runs as one ServiceAccount: give one side credentialsSecretRef instead of identity, or the same ServiceAccount", a, b)
}

// copyStatus is the status of the copy name, added Pending when absent.
func copyStatus(b *echov1alpha1.EchoBackup, name string) *echov1alpha1.BackupCopyStatus {
	for i := range b.Status.Copies {
		if b.Status.Copies[i].Name == name {
			return &b.Status.Copies[i]
		}
	}
	b.Status.Copies = append(b.Status.Copies, echov1alpha1.BackupCopyStatus{Name: name, Phase: echov1alpha1.PhasePending,
		Reason: echov1alpha1.CopyReasonWaitingForBackup})
	return &b.Status.Copies[len(b.Status.Copies)-1]
}

// copyWaitsForSecret says whether a copy of b waits for a storage Secret
// to exist with the label: the Secret's event wakes b.
func copyWaitsForSecret(b *echov1alpha1.EchoBackup) bool {
	return slices.ContainsFunc(b.Status.Copies, func(c echov1alpha1.BackupCopyStatus) bool {
		return c.Phase == echov1alpha1.PhasePending && c.Reason == echov1alpha1.ReasonSecretNotFound
	})
}

// copyFinished says whether the copy's outcome is recorded for good; a
// pruned copy completed before.
func copyFinished(st *echov1alpha1.BackupCopyStatus) bool {
	return st.Phase == echov1alpha1.PhaseCompleted || st.Phase == echov1alpha1.PhaseFailed || st.Phase == echov1alpha1.PhasePruned
}

// reconcileCopies moves each copy of a complete backup towards Completed
// or Failed, then sums them up in the Copied condition. Only a complete
// backup is copied: a failed one has nothing to copy.
func (r *EchoBackupReconciler) reconcileCopies(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	if len(b.Spec.CopyTo) == 0 || !meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete) {
		return ctrl.Result{}, nil
	}
	var result ctrl.Result
	for i := range b.Spec.CopyTo {
		st := copyStatus(b, b.Spec.CopyTo[i].Name)
		if copyFinished(st) {
			continue
		}
		res, err := r.reconcileCopy(ctx, b, &b.Spec.CopyTo[i], st)
		if err != nil {
			return ctrl.Result{}, err
		}
		if res.RequeueAfter > 0 && (result.RequeueAfter == 0 || res.RequeueAfter < result.RequeueAfter) {
			result = res
		}
	}
	r.summarizeCopies(b)
	return result, nil
}

// reconcileCopy creates the copy's Job once both storages are resolved
// and what they name opted in, and turns its outcome into the copy's
// status.
func (r *EchoBackupReconciler) reconcileCopy(ctx context.Context, b *echov1alpha1.EchoBackup, c *echov1alpha1.BackupCopy,
	st *echov1alpha1.BackupCopyStatus) (ctrl.Result, error) {
	from, _, err := resolveStorage(ctx, r.Client, r.APIReader, b.Namespace, b.Spec.Storage)
	if err != nil {
		return r.copyRefused(b, c.Name, st, err)
	}
	to, loc, err := resolveStorage(ctx, r.Client, r.APIReader, b.Namespace, c.Storage)
	if err != nil {
		return r.copyRefused(b, c.Name, st, err)
	}
	if msg := identityConflict(from, to); msg != "" {
		r.failCopy(b, st, echov1alpha1.CopyReasonIdentityConflict, msg)
		return ctrl.Result{}, nil
	}
	job, created, err := ensureOwnedJob(ctx, r.Client, r.APIReader, r.Scheme, backupWork(r.JobSigner, b), &b.Status.Jobs,
		copyJob(b, c.Name, from, to, moverFor(r.MoverImage, r.MoverEnv, b.Spec.Mover, loc)),
		allChecks(func(ctx context.Context) error {
			return storageOptedIn(ctx, r.APIReader, b.Namespace, from, r.StorageEndpoints)
		},
			newArtifactCheck(r.APIReader, b.Namespace, loc, to, r.StorageEndpoints)))
	if err != nil {
		return r.copyRefused(b, c.Name, st, err)
	}
	if job == nil {
		return ctrl.Result{}, nil
	}
	if created {
		log.FromContext(ctx).Info("Started copy", "job", job.Name, "copy", c.Name)
		r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonCopyStarted, "Started Job %s to copy the backup to %s", job.Name, c.Name)
	}
	return r.observeCopyJob(ctx, b, st, job)
}

// copyRefused records why a copy's Job is not created: a Secret yet to
// exist keeps the copy Pending, with a Warning Event when it starts to
// wait, until the Secret's event brings it back (copyWaitsForSecret); a
// refusal fails it, saying what to fix; any other error is returned.
func (r *EchoBackupReconciler) copyRefused(b *echov1alpha1.EchoBackup, name string, st *echov1alpha1.BackupCopyStatus, err error) (ctrl.Result, error) {
	if missing, ok := asSecretsNotFound(err); ok {
		msg := missing.message("the copy starts once they exist with the label")
		if st.Reason != echov1alpha1.ReasonSecretNotFound {
			r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonSecretNotFound, "Copy %s: %s", name, msg)
		}
		st.Phase, st.Reason, st.Message = echov1alpha1.PhasePending, echov1alpha1.ReasonSecretNotFound, truncateMessage(msg)
		return ctrl.Result{}, nil
	}
	if refused, ok := asJobNotOwned(err); ok {
		r.failCopy(b, st, echov1alpha1.ReasonJobNotOwned, refused.message("EchoBackup "+b.Name, "then copy under a new EchoBackup"))
		return ctrl.Result{}, nil
	}
	if refused, ok := asOptInRefusal(err); ok {
		r.failCopy(b, st, refused.reason(), refused.message("back up again: this copy has failed for good", ""))
		return ctrl.Result{}, nil
	}
	if refused, ok := asLocationUnavailable(err); ok {
		r.failCopy(b, st, echov1alpha1.BackupReasonLocationUnavailable, refused.message("back up again: this copy has failed for good"))
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, fmt.Errorf("copy %s: %w", name, err)
}

// observeCopyJob turns the copy Job's state into the copy's status, with
// the end of its data mover's log once it finished.
func (r *EchoBackupReconciler) observeCopyJob(ctx context.Context, b *echov1alpha1.EchoBackup, st *echov1alpha1.BackupCopyStatus,
	job *batchv1.Job) (ctrl.Result, error) {
	var archive moverprotocol.Archive
	out, err := readMoverJob(ctx, r.Client, r.APIReader, job, r.Clock.Now(), &archive)
	if err != nil {
		return ctrl.Result{}, err
	}
	if out.outcome != moverRunning && out.outcome != moverAwaitingResult {
		// Written with the outcome, before the Job and its pods go.
		moverLogReader{cache: r.Client, api: r.APIReader, logs: r.PodLogs}.ensureMoverLog(ctx, &st.MoverLog, job)
	}
	switch {
	case out.outcome == moverRunning && out.unschedulable != "":
		msg := unschedulableMessage(job, out.unschedulable)
		if st.Reason != echov1alpha1.ReasonMoverUnschedulable {
			r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonMoverUnschedulable, "Copy %s: %s", st.Name, msg)
		}
		st.Phase, st.Reason, st.Message = echov1alpha1.PhasePending, echov1alpha1.ReasonMoverUnschedulable, truncateMessage(msg)
	case out.outcome == moverRunning, out.outcome == moverAwaitingResult:
		st.Phase, st.Reason = echov1alpha1.PhaseRunning, echov1alpha1.CopyReasonCopying
		st.Message = fmt.Sprintf("Job %s is copying the backup", job.Name)
		if out.outcome == moverAwaitingResult {
			return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
		}
	case out.outcome == moverFailed && out.failure != nil:
		r.failCopy(b, st, backupFailureReason(out.failure.Reason), out.failure.Error)
	case out.outcome == moverFailed:
		r.failCopy(b, st, echov1alpha1.BackupReasonJobFailed, "The copy Job failed: "+out.jobMessage)
	case out.outcome == moverSucceeded && archive.Checksum == b.Status.Checksum:
		r.completeCopy(b, st, &archive)
	default:
		r.failCopy(b, st, echov1alpha1.BackupReasonArtifactMissing,
			fmt.Sprintf("The copy Job succeeded without reporting a copy of checksum %s", b.Status.Checksum))
	}
	return ctrl.Result{}, nil
}

func (r *EchoBackupReconciler) completeCopy(b *echov1alpha1.EchoBackup, st *echov1alpha1.BackupCopyStatus, res *moverprotocol.Archive) {
	st.Phase, st.Reason = echov1alpha1.PhaseCompleted, echov1alpha1.CopyReasonCopied
	st.Key, st.Checksum, st.Size = res.Location, res.Checksum, res.Size
	st.CompletionTime = ptrTime(r.Clock.Now())
	st.Message = truncateMessage(fmt.Sprintf("Copied %d bytes to %s", res.Size, res.Location))
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonCopyCompleted, "Copy %s: %s", st.Name, st.Message)
}

// failCopy fails the copy for good, with a Warning Event; the backup
// stays complete.
func (r *EchoBackupReconciler) failCopy(b *echov1alpha1.EchoBackup, st *echov1alpha1.BackupCopyStatus, reason, message string) {
	st.Phase, st.Reason, st.Message = echov1alpha1.PhaseFailed, reason, truncateMessage(message)
	st.CompletionTime = ptrTime(r.Clock.Now())
	r.Recorder.Eventf(b, corev1.EventTypeWarning, echov1alpha1.EventReasonCopyFailed, "Copy %s failed (%s): %s", st.Name, reason, message)
}

// summarizeCopies sets the Copied condition from the copies' phases:
// True once all completed (pruned ones did); False naming those that failed, once none is
// under way any more; else False while they are copied.
func (r *EchoBackupReconciler) summarizeCopies(b *echov1alpha1.EchoBackup) {
	var failed, pending []string
	for _, c := range b.Spec.CopyTo {
		st := copyStatus(b, c.Name)
		switch st.Phase {
		case echov1alpha1.PhaseFailed:
			failed = append(failed, fmt.Sprintf("%s (%s: %s)", st.Name, st.Reason, st.Message))
		case echov1alpha1.PhaseCompleted, echov1alpha1.PhasePruned:
		default:
			pending = append(pending, st.Name)
		}
	}
	switch {
	case len(failed) > 0 && len(pending) == 0:
		setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionCopied, metav1.ConditionFalse, echov1alpha1.CopyReasonCopyFailed,
			"Copies failed: "+strings.Join(failed, "; "))
	case len(pending) > 0:
		setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionCopied, metav1.ConditionFalse, echov1alpha1.CopyReasonCopying,
			"Copying to "+strings.Join(pending, ", "))
	default:
		setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionCopied, metav1.ConditionTrue, echov1alpha1.CopyReasonCopied,
			fmt.Sprintf("Copied to %d storages", len(b.Spec.CopyTo)))
	}
}

// removeFinishedCopyJobs removes the Jobs of the copies whose outcome is
// in the status by now, with their pods.
func (r *EchoBackupReconciler) removeFinishedCopyJobs(ctx context.Context, b *echov1alpha1.EchoBackup) error {
	for i := range b.Status.Copies {
		st := &b.Status.Copies[i]
		if !copyFinished(st) || !slices.ContainsFunc(b.Spec.CopyTo, func(c echov1alpha1.BackupCopy) bool { return c.Name == st.Name }) {
			continue
		}
		if err := removeOwnJob(ctx, r.Client, b.Namespace, b.Status.Jobs, copyJobName(b, st.Name)); err != nil {
			return err
		}
	}
	return nil
}
