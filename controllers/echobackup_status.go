package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// An EchoBackup's status: Complete or Failed, as a Job's, with what the
// data mover stored or why it could not, and the phase they give.

// backupFailureReason maps a data mover failure reason to a condition
// reason.
func backupFailureReason(moverReason moverprotocol.Reason) string {
	switch moverReason {
	case moverprotocol.ReasonAccessDenied:
		return echov1alpha1.BackupReasonCredentialsError
	case moverprotocol.ReasonEncryption:
		return echov1alpha1.BackupReasonEncryptionError
	case "":
		return echov1alpha1.BackupReasonJobFailed
	default:
		return echov1alpha1.BackupReasonStorageError
	}
}

// running says the backup's Job is under way, or that its pod waits for a
// node (setMoverProgress).
func (r *EchoBackupReconciler) running(b *echov1alpha1.EchoBackup, job *batchv1.Job, unschedulable string) {
	setMoverProgress(r.Recorder, b, &b.Status.Conditions, job, unschedulable, echov1alpha1.BackupReasonBackingUp,
		fmt.Sprintf("Job %s is backing up Echo %s", job.Name, b.Spec.EchoName))
}

// waitForSecrets says the backup waits for storage Secrets to exist, with
// a Warning Event when it starts to.
func (r *EchoBackupReconciler) waitForSecrets(b *echov1alpha1.EchoBackup, missing *secretsNotFound) {
	msg := missing.message("the backup starts once they exist with the label")
	if startsWaitingForSecrets(b.Status.Conditions) {
		r.Recorder.Event(b, corev1.EventTypeWarning, echov1alpha1.EventReasonSecretNotFound, msg)
	}
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionComplete, metav1.ConditionFalse, echov1alpha1.ReasonSecretNotFound, msg)
}

func (r *EchoBackupReconciler) complete(b *echov1alpha1.EchoBackup, res *moverprotocol.Archive) {
	b.Status.Size, b.Status.Checksum, b.Status.Location = res.Size, res.Checksum, res.Location
	b.Status.Files = int64(res.Files)
	b.Status.CompletionTime = ptrTime(r.Clock.Now())
	b.Status.Error = ""
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionComplete, metav1.ConditionTrue, echov1alpha1.BackupReasonCompleted,
		fmt.Sprintf("Stored %d bytes at %s", res.Size, res.Location))
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonBackupCompleted, "Stored %d bytes at %s", res.Size, res.Location)
}

func (r *EchoBackupReconciler) fail(b *echov1alpha1.EchoBackup, reason, message string) {
	r.failWith(b, reason, echov1alpha1.EventReasonBackupFailed, message)
}

// failWith fails the backup for good, with the Warning Event eventReason.
func (r *EchoBackupReconciler) failWith(b *echov1alpha1.EchoBackup, reason, eventReason, message string) {
	b.Status.Error = message
	b.Status.CompletionTime = ptrTime(r.Clock.Now())
	// As a failed Job's, a failed backup's conditions say Failed only.
	meta.RemoveStatusCondition(&b.Status.Conditions, echov1alpha1.BackupConditionComplete)
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionFailed, metav1.ConditionTrue, reason, message)
	r.Recorder.Event(b, corev1.EventTypeWarning, eventReason, message)
}

// patchStatus writes the status when it changed, and counts a backup that
// finished once its end is written.
func (r *EchoBackupReconciler) patchStatus(ctx context.Context, orig, b *echov1alpha1.EchoBackup) error {
	b.Status.ObservedGeneration = b.Generation
	b.Status.Phase, b.Status.Reason = echov1alpha1.BackupPhase(b.Status.Conditions)
	return patchOperationStatus(ctx, r.Client, "EchoBackup", orig, b, orig.Status.Conditions, b.Status.Conditions,
		orig.Status, b.Status, func() { recordBackupFinished(b) })
}

// recordBackupFinished counts a finished backup in the operator's metrics.
func recordBackupFinished(b *echov1alpha1.EchoBackup) {
	if c := meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		opmetrics.BackupFinished(false, c.Reason, 0, 0, 0)
		countMoverFailure(opmetrics.MoverBackup, c.Reason)
		return
	}
	opmetrics.BackupFinished(true, echov1alpha1.BackupReasonCompleted, elapsed(b.Status.StartTime, b.Status.CompletionTime), b.Status.Size, b.Status.Files)
}

func backupFinished(b *echov1alpha1.EchoBackup) bool { return finished(b.Status.Conditions) }
