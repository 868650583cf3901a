package controllers

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The deadline of a restore: spec.timeout, counted from status.startTime.
// Past it the restore fails; reconcileRelease then stops its Jobs and gives
// the Echo back once no pod of theirs can write.

// restoreTimeout is a restore's spec.timeout, or the default.
func restoreTimeout(rs *echov1alpha1.EchoRestore) time.Duration {
	if rs.Spec.Timeout == nil || rs.Spec.Timeout.Duration <= 0 {
		return echov1alpha1.DefaultRestoreTimeout
	}
	return rs.Spec.Timeout.Duration
}

// restoreTimeLeft is how long a started restore has left; ok is false for
// a restore that has not started, whose deadline is not set yet.
func restoreTimeLeft(rs *echov1alpha1.EchoRestore, now time.Time) (left time.Duration, ok bool) {
	if rs.Status.StartTime == nil {
		return 0, false
	}
	return rs.Status.StartTime.Add(restoreTimeout(rs)).Sub(now), true
}

// failIfPastDeadline fails a restore past its deadline, saying which step
// it had reached, and reports whether it did.
func (r *EchoRestoreReconciler) failIfPastDeadline(rs *echov1alpha1.EchoRestore) bool {
	left, ok := restoreTimeLeft(rs, r.Clock.Now())
	if !ok || left > 0 {
		return false
	}
	r.fail(rs, echov1alpha1.RestoreReasonDeadlineExceeded, deadlineMessage(rs))
	return true
}

func deadlineMessage(rs *echov1alpha1.EchoRestore) string {
	timeout := restoreTimeout(rs)
	if meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionDataRestored) {
		return fmt.Sprintf("The data was restored, but Echo %s was not Ready within spec.timeout (%s): see its Ready condition",
			rs.Status.EchoName, timeout)
	}
	step := "starting"
	if c := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete); c != nil {
		step = c.Reason + ": " + c.Message
	}
	return fmt.Sprintf("The restore did not complete within spec.timeout (%s); it was at step %s. "+
		"Its Jobs are stopped and Echo %s is given back once their pods are gone; "+
		"create a new EchoRestore with a longer spec.timeout to try again",
		timeout, step, rs.Status.EchoName)
}

// requeueByDeadline makes sure an unfinished restore is looked at again
// when its deadline passes, even if nothing it watches changes.
func requeueByDeadline(result ctrl.Result, rs *echov1alpha1.EchoRestore, now time.Time) ctrl.Result {
	left, ok := restoreTimeLeft(rs, now)
	if !ok || restoreFinished(rs) {
		return result
	}
	left = max(left, time.Second)
	if result.RequeueAfter == 0 || left < result.RequeueAfter {
		result.RequeueAfter = left
	}
	return result
}

// jobDeadline bounds a restore's Job by the restore's timeout and the
// step's own limit.
func jobDeadline(rs *echov1alpha1.EchoRestore, limit time.Duration) int64 {
	return int64(min(restoreTimeout(rs), limit).Seconds())
}
