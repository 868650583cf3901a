package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// An EchoRestore's status: the step under way in Complete, DataRestored
// once the data is back, then Complete or Failed, with what the data mover
// reported and the phase they give.

// restoreFailureReason maps a data mover error reason to a condition reason.
func restoreFailureReason(moverReason moverprotocol.Reason) string {
	switch moverReason {
	case moverprotocol.ReasonTargetNotEmpty:
		return echov1alpha1.RestoreReasonTargetHasData
	case moverprotocol.ReasonNotFound:
		return echov1alpha1.RestoreReasonArtifactNotFound
	case moverprotocol.ReasonChecksumMismatch, moverprotocol.ReasonCorruptArchive, moverprotocol.ReasonUnknownFormat, moverprotocol.ReasonUnsafePath:
		return echov1alpha1.RestoreReasonVerifyFailed
	case moverprotocol.ReasonAccessDenied:
		return echov1alpha1.RestoreReasonCredentialsError
	case moverprotocol.ReasonEncryption:
		return echov1alpha1.RestoreReasonEncryptionError
	case moverprotocol.ReasonNoSpace:
		return echov1alpha1.RestoreReasonNoSpace
	case moverprotocol.ReasonInvalidArgument:
		return echov1alpha1.RestoreReasonInvalidConfig
	case "":
		return echov1alpha1.RestoreReasonJobFailed
	default:
		return echov1alpha1.RestoreReasonStorageError
	}
}

// restoreFailureMessage is the data mover's error, with what to do about
// the failures a person settles with the restore's own spec.
func restoreFailureMessage(rs *echov1alpha1.EchoRestore, res *moverprotocol.Failure) string {
	switch res.Reason {
	case moverprotocol.ReasonTargetNotEmpty:
		return res.Error + ": the Echo already holds data; to replace it, create a new EchoRestore with existingData: Replace " +
			"(the current data is then kept aside in .echo-pre-restore-<time> in the data directory)"
	case moverprotocol.ReasonNoSpace:
		return res.Error + ": the Echo's volume is too small for the backup; raise spec.persistence.size of Echo " + rs.Status.EchoName
	case moverprotocol.ReasonEncryption:
		return res.Error + ": the backup was written with SSE-C, and the storage the restore reads has no key or another; " +
			"give it storage.s3.encryption with the Secret holding the key the backup was written with, then create a new EchoRestore"
	}
	return res.Error
}

// waitForSecrets says the restore waits for storage Secrets to exist,
// with a Warning Event when it starts to.
func (r *EchoRestoreReconciler) waitForSecrets(rs *echov1alpha1.EchoRestore, missing *secretsNotFound) {
	msg := missing.message("the restore goes on once they exist with the label, within its deadline")
	if startsWaitingForSecrets(rs.Status.Conditions) {
		r.Recorder.Event(rs, corev1.EventTypeWarning, echov1alpha1.EventReasonSecretNotFound, msg)
	}
	r.progress(rs, echov1alpha1.ReasonSecretNotFound, msg)
}

// progress reports the step under way in the Complete condition.
func (r *EchoRestoreReconciler) progress(rs *echov1alpha1.EchoRestore, reason, message string) {
	setCondition(&rs.Status.Conditions, rs.Generation, echov1alpha1.RestoreConditionComplete, metav1.ConditionFalse, reason, message)
}

func (r *EchoRestoreReconciler) dataRestored(rs *echov1alpha1.EchoRestore, message string) {
	setCondition(&rs.Status.Conditions, rs.Generation, echov1alpha1.RestoreConditionDataRestored, metav1.ConditionTrue,
		echov1alpha1.RestoreReasonCompleted, message)
	r.progress(rs, echov1alpha1.RestoreReasonWaitingForEcho, fmt.Sprintf("Waiting for Echo %s to be Ready", rs.Status.EchoName))
	r.Recorder.Event(rs, corev1.EventTypeNormal, echov1alpha1.EventReasonDataRestored, message)
}

func (r *EchoRestoreReconciler) complete(rs *echov1alpha1.EchoRestore) {
	rs.Status.CompletionTime = ptrTime(r.Clock.Now())
	rs.Status.Error = ""
	message := fmt.Sprintf("Echo %s is Ready on the data restored from %s", rs.Status.EchoName, rs.Status.RestoredFrom)
	setCondition(&rs.Status.Conditions, rs.Generation, echov1alpha1.RestoreConditionComplete, metav1.ConditionTrue,
		echov1alpha1.RestoreReasonCompleted, message)
	r.Recorder.Event(rs, corev1.EventTypeNormal, echov1alpha1.EventReasonRestoreCompleted, message)
}

func (r *EchoRestoreReconciler) fail(rs *echov1alpha1.EchoRestore, reason, message string) {
	r.failWith(rs, reason, echov1alpha1.EventReasonRestoreFailed, message)
}

// failWith fails the restore for good, with the Warning Event eventReason.
func (r *EchoRestoreReconciler) failWith(rs *echov1alpha1.EchoRestore, reason, eventReason, message string) {
	rs.Status.Error = message
	rs.Status.CompletionTime = ptrTime(r.Clock.Now())
	setCondition(&rs.Status.Conditions, rs.Generation, echov1alpha1.RestoreConditionFailed, metav1.ConditionTrue, reason, message)
	r.progress(rs, reason, "The restore failed: see the Failed condition")
	r.Recorder.Event(rs, corev1.EventTypeWarning, eventReason, message)
}

// patchStatus writes the status when it changed, and counts a restore that
// finished once its end is written.
func (r *EchoRestoreReconciler) patchStatus(ctx context.Context, orig, rs *echov1alpha1.EchoRestore) error {
	rs.Status.ObservedGeneration = rs.Generation
	rs.Status.Phase, rs.Status.Reason = echov1alpha1.RestorePhase(rs.Status.Conditions)
	return patchOperationStatus(ctx, r.Client, "EchoRestore", orig, rs, orig.Status.Conditions, rs.Status.Conditions,
		orig.Status, rs.Status, func() { recordRestoreFinished(rs) })
}

// recordRestoreFinished counts a finished restore in the operator's
// metrics.
func recordRestoreFinished(rs *echov1alpha1.EchoRestore) {
	if c := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		opmetrics.RestoreFinished(false, c.Reason, 0)
		countMoverFailure(opmetrics.MoverRestore, c.Reason)
		return
	}
	opmetrics.RestoreFinished(true, echov1alpha1.RestoreReasonCompleted, elapsed(rs.Status.StartTime, rs.Status.CompletionTime))
}

func restoreFinished(rs *echov1alpha1.EchoRestore) bool { return finished(rs.Status.Conditions) }
