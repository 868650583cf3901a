package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestRestoreDeadline(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	started := func(timeout time.Duration) *echov1alpha1.EchoRestore {
		rs := &echov1alpha1.EchoRestore{Status: echov1alpha1.EchoRestoreStatus{StartTime: &metav1.Time{Time: start}}}
		if timeout > 0 {
			rs.Spec.Timeout = &metav1.Duration{Duration: timeout}
		}
		return rs
	}
	finished := started(0)
	finished.Status.Conditions = []metav1.Condition{{Type: echov1alpha1.RestoreConditionFailed, Status: metav1.ConditionTrue}}

	tests := []struct {
		name    string
		rs      *echov1alpha1.EchoRestore
		now     time.Time
		in      ctrl.Result
		want    ctrl.Result
		inspect int64
		restore int64
	}{
		{name: "not started: no deadline yet", rs: &echov1alpha1.EchoRestore{}, now: start,
			in: ctrl.Result{}, want: ctrl.Result{}, inspect: 600, restore: 3600},
		{name: "default timeout of an hour", rs: started(0), now: start.Add(10 * time.Minute),
			in: ctrl.Result{}, want: ctrl.Result{RequeueAfter: 50 * time.Minute}, inspect: 600, restore: 3600},
		{name: "a sooner requeue is kept", rs: started(0), now: start,
			in: ctrl.Result{RequeueAfter: 5 * time.Second}, want: ctrl.Result{RequeueAfter: 5 * time.Second}, inspect: 600, restore: 3600},
		{name: "a short timeout bounds both Jobs", rs: started(5 * time.Minute), now: start.Add(time.Minute),
			in: ctrl.Result{RequeueAfter: 10 * time.Minute}, want: ctrl.Result{RequeueAfter: 4 * time.Minute}, inspect: 300, restore: 300},
		{name: "a long timeout gives the restore Job all of it", rs: started(6 * time.Hour), now: start,
			in: ctrl.Result{}, want: ctrl.Result{RequeueAfter: 6 * time.Hour}, inspect: 600, restore: 6 * 3600},
		{name: "past the deadline: looked at again shortly", rs: started(time.Minute), now: start.Add(time.Hour),
			in: ctrl.Result{}, want: ctrl.Result{RequeueAfter: time.Second}, inspect: 60, restore: 60},
		{name: "a finished restore has no deadline", rs: finished, now: start,
			in: ctrl.Result{}, want: ctrl.Result{}, inspect: 600, restore: 3600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := requeueByDeadline(tt.in, tt.rs, tt.now); got != tt.want {
				t.Errorf("requeueByDeadline = %+v, want %+v", got, tt.want)
			}
			if got := jobDeadline(tt.rs, inspectJobLimit); got != tt.inspect {
				t.Errorf("inspect Job deadline = %d, want %d", got, tt.inspect)
			}
			if got := jobDeadline(tt.rs, restoreJobLimit); got != tt.restore {
				t.Errorf("restore Job deadline = %d, want %d", got, tt.restore)
			}
		})
	}
}

func TestDeadlineMessageSaysWhereTheRestoreWas(t *testing.T) {
	rs := &echov1alpha1.EchoRestore{Status: echov1alpha1.EchoRestoreStatus{EchoName: "web", Conditions: []metav1.Condition{{
		Type: echov1alpha1.RestoreConditionComplete, Status: metav1.ConditionFalse,
		Reason: echov1alpha1.RestoreReasonQuiescing, Message: "Waiting for the 2 pods of Echo web to stop",
	}}}}
	got := deadlineMessage(rs)
	for _, want := range []string{"spec.timeout (1h0m0s)", "Quiescing: Waiting for the 2 pods", "Echo web is given back", "longer spec.timeout"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	rs.Status.Conditions = append(rs.Status.Conditions, metav1.Condition{Type: echov1alpha1.RestoreConditionDataRestored, Status: metav1.ConditionTrue})
	if got := deadlineMessage(rs); !strings.Contains(got, "The data was restored, but Echo web was not Ready") {
		t.Errorf("after DataRestored: %q", got)
	}
}
