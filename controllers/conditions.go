package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
)

// maxMessageLen bounds the messages the controllers write: long enough
// for any error worth reading, short enough to keep objects small.
const maxMessageLen = 4096

// setCondition sets a condition, keeping its transition time when its
// status holds.
func setCondition(conds *[]metav1.Condition, generation int64, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: truncateMessage(message), ObservedGeneration: generation,
	})
}

// truncateMessage cuts a message to maxMessageLen bytes.
func truncateMessage(s string) string {
	if len(s) <= maxMessageLen {
		return s
	}
	return s[:maxMessageLen-3] + "..."
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// patchStatusIfChanged writes obj's status, as a merge patch from orig,
// when it differs from orig's: an unchanged object is never written.
func patchStatusIfChanged(ctx context.Context, c client.Client, kind string, orig, obj client.Object, origStatus, status any) error {
	return patchStatus(ctx, c, kind, client.MergeFrom(orig), obj, origStatus, status)
}

// patchFinalStatus is patchStatusIfChanged for the write that ends an
// operation: it is refused (Conflict, and the reconcile runs again) when
// obj changed since it was read, so that an end decided on a stale copy is
// never written, nor counted, twice.
func patchFinalStatus(ctx context.Context, c client.Client, kind string, orig, obj client.Object, origStatus, status any) error {
	return patchStatus(ctx, c, kind, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}), obj, origStatus, status)
}

func patchStatus(ctx context.Context, c client.Client, kind string, patch client.Patch, obj client.Object, origStatus, status any) error {
	if equalJSON(origStatus, status) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, patch); err != nil {
		return fmt.Errorf("patching the status of %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// equalJSON compares two values as the API server would store them.
func equalJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// A backup's and a restore's status have one shape: a Complete condition
// that reports the step under way and then the end, a Failed condition
// True for good, a phase read from them, and a metric counted once the end
// is written. The two kinds name their conditions alike
// (BackupConditionComplete and RestoreConditionComplete are "Complete").

// finished says whether a backup or restore with these conditions ended:
// Complete or Failed.
func finished(conds []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conds, echov1alpha1.BackupConditionComplete) ||
		meta.IsStatusConditionTrue(conds, echov1alpha1.BackupConditionFailed)
}

// patchOperationStatus writes a backup's or restore's status when it
// changed; the write that ends it (patchFinalStatus) is counted by
// countFinished once written.
func patchOperationStatus(ctx context.Context, c client.Client, kind string, orig, obj client.Object,
	origConds, conds []metav1.Condition, origStatus, status any, countFinished func()) error {
	if finished(origConds) || !finished(conds) {
		return patchStatusIfChanged(ctx, c, kind, orig, obj, origStatus, status)
	}
	if err := patchFinalStatus(ctx, c, kind, orig, obj, origStatus, status); err != nil {
		return err
	}
	countFinished()
	return nil
}

// countMoverFailure counts, for the data mover's operation, a failure a
// mover Job reports.
func countMoverFailure(operation, reason string) {
	if moverFailureReasons[reason] {
		opmetrics.MoverFailed(operation, reason)
	}
}

// moverFailureReasons are the reasons of the backup and restore failures a
// data mover Job reports (backupFailureReason, restoreFailureReason), and
// of a Job that failed without a report.
var moverFailureReasons = map[string]bool{
	echov1alpha1.BackupReasonJobFailed:         true,
	echov1alpha1.BackupReasonStorageError:      true,
	echov1alpha1.BackupReasonCredentialsError:  true,
	echov1alpha1.BackupReasonEncryptionError:   true,
	echov1alpha1.RestoreReasonVerifyFailed:     true,
	echov1alpha1.RestoreReasonArtifactNotFound: true,
	echov1alpha1.RestoreReasonTargetHasData:    true,
	echov1alpha1.RestoreReasonNoSpace:          true,
}

// elapsed is the time from start to end, zero when either is unknown.
func elapsed(start, end *metav1.Time) time.Duration {
	if start == nil || end == nil {
		return 0
	}
	return end.Sub(start.Time)
}
