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
