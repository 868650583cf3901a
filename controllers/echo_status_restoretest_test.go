package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestLastRestoreTest(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	schedule := func(name string, ended time.Duration, outcome echov1alpha1.RestoreTestOutcome) echov1alpha1.EchoBackupSchedule {
		s := echov1alpha1.EchoBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Status.LastRestoreTest = &echov1alpha1.RestoreTestResult{Outcome: outcome, CompletionTime: metav1.NewTime(t0.Add(ended))}
		return s
	}
	untested := echov1alpha1.EchoBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "untested"}}
	deleting := schedule("deleting", 3*time.Hour, echov1alpha1.RestoreTestFailed)
	deleting.DeletionTimestamp = ptrTime(t0)
	cases := []struct {
		name      string
		schedules []echov1alpha1.EchoBackupSchedule
		want      string // the schedule, "" for none
	}{
		{"none", []echov1alpha1.EchoBackupSchedule{untested}, ""},
		{"the test that ended last", []echov1alpha1.EchoBackupSchedule{
			schedule("weekly", time.Hour, echov1alpha1.RestoreTestSucceeded), untested,
			schedule("daily", 2*time.Hour, echov1alpha1.RestoreTestFailed), deleting}, "daily"},
		{"ended in the same second: the first name", []echov1alpha1.EchoBackupSchedule{
			schedule("b", time.Hour, echov1alpha1.RestoreTestSucceeded), schedule("a", time.Hour, echov1alpha1.RestoreTestFailed)}, "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := lastRestoreTest(tc.schedules)
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("got %+v, want none", got)
			case tc.want != "" && (got == nil || got.Schedule != tc.want):
				t.Fatalf("got %+v, want the test of %s", got, tc.want)
			}
			if got != nil && tc.schedules[0].Status.LastRestoreTest.Schedule != "" {
				t.Error("the schedules' results were changed")
			}
		})
	}
}

func TestSameRestoreTest(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	base := &echov1alpha1.RestoreTestResult{Schedule: "s", Restore: "r", Backup: "b", Outcome: echov1alpha1.RestoreTestSucceeded,
		Reason: "Verified", Message: "m", StartTime: ptrTime(t0), CompletionTime: metav1.NewTime(t0.Add(time.Minute)),
		Duration: &metav1.Duration{Duration: time.Minute}}
	with := func(change func(*echov1alpha1.RestoreTestResult)) *echov1alpha1.RestoreTestResult {
		c := base.DeepCopy()
		change(c)
		return c
	}
	cases := []struct {
		name string
		a, b *echov1alpha1.RestoreTestResult
		want bool
	}{
		{"both nil", nil, nil, true},
		{"one nil", base, nil, false},
		{"equal", base, base.DeepCopy(), true},
		{"times within the second the API server keeps", base, with(func(r *echov1alpha1.RestoreTestResult) {
			r.CompletionTime = metav1.NewTime(r.CompletionTime.Add(300 * time.Millisecond))
		}), true},
		{"another outcome", base, with(func(r *echov1alpha1.RestoreTestResult) { r.Outcome = echov1alpha1.RestoreTestFailed }), false},
		{"another message", base, with(func(r *echov1alpha1.RestoreTestResult) { r.Message = "n" }), false},
		{"another start", base, with(func(r *echov1alpha1.RestoreTestResult) { r.StartTime = nil }), false},
		{"another duration", base, with(func(r *echov1alpha1.RestoreTestResult) { r.Duration = nil }), false},
	}
	for _, tc := range cases {
		if got := sameRestoreTest(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: sameRestoreTest = %v, want %v", tc.name, got, tc.want)
		}
	}
}
