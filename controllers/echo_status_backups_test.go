package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestSummarizeBackups(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return ptrTime(t0.Add(d)) }
	backup := func(name, cond string, completed *metav1.Time) echov1alpha1.EchoBackup {
		b := echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Name: name}}
		b.Status.CompletionTime = completed
		if cond != "" {
			b.Status.Conditions = []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue}}
		}
		return b
	}
	deleting := func(b echov1alpha1.EchoBackup) echov1alpha1.EchoBackup {
		b.DeletionTimestamp = at(time.Hour)
		return b
	}
	schedule := func(name string, next *metav1.Time, suspend bool) echov1alpha1.EchoBackupSchedule {
		s := echov1alpha1.EchoBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.Suspend, s.Status.NextScheduleTime = suspend, next
		return s
	}
	cases := []struct {
		name      string
		backups   []echov1alpha1.EchoBackup
		schedules []echov1alpha1.EchoBackupSchedule
		wantLast  string // "" for none
		wantNext  string // "" for none
	}{
		{name: "nothing"},
		{"the backup that completed last, whatever its name",
			[]echov1alpha1.EchoBackup{
				backup("b", echov1alpha1.BackupConditionComplete, at(time.Minute)),
				backup("a", echov1alpha1.BackupConditionComplete, at(2*time.Minute)),
				backup("c", echov1alpha1.BackupConditionComplete, at(0)),
			}, nil, "a", ""},
		{"failed, running and deleted backups do not count",
			[]echov1alpha1.EchoBackup{
				backup("ok", echov1alpha1.BackupConditionComplete, at(0)),
				backup("failed", echov1alpha1.BackupConditionFailed, at(time.Hour)),
				backup("running", "", nil),
				deleting(backup("deleting", echov1alpha1.BackupConditionComplete, at(time.Hour))),
			}, nil, "ok", ""},
		{"completed in the same second: the first name",
			[]echov1alpha1.EchoBackup{
				backup("y", echov1alpha1.BackupConditionComplete, at(0)),
				backup("x", echov1alpha1.BackupConditionComplete, at(0)),
			}, nil, "x", ""},
		{"the schedule due first; suspended and unscheduled ones do not count", nil,
			[]echov1alpha1.EchoBackupSchedule{
				schedule("daily", at(24*time.Hour), false),
				schedule("hourly", at(time.Hour), false),
				schedule("paused", at(time.Minute), true),
				schedule("invalid", nil, false),
			}, "", "hourly"},
		{"due at the same time: the first name", nil,
			[]echov1alpha1.EchoBackupSchedule{schedule("b", at(time.Hour), false), schedule("a", at(time.Hour), false)}, "", "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := summarizeBackups(tc.backups, tc.schedules)
			if name := nameOrEmpty(got.LastSuccessfulBackup); name != tc.wantLast {
				t.Errorf("lastSuccessfulBackup = %q, want %q", name, tc.wantLast)
			}
			next := ""
			if got.NextScheduledBackup != nil {
				next = got.NextScheduledBackup.Schedule
			}
			if next != tc.wantNext {
				t.Errorf("nextScheduledBackup = %q, want %q", next, tc.wantNext)
			}
			if !got.equal(summarizeBackups(tc.backups, tc.schedules)) {
				t.Error("the same backups give a summary that differs")
			}
		})
	}
}

func nameOrEmpty(r *echov1alpha1.BackupReference) string {
	if r == nil {
		return ""
	}
	return r.Name
}

func TestBackupSummaryEqual(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	last := func(name string, t metav1.Time) backupSummary {
		return backupSummary{LastSuccessfulBackup: &echov1alpha1.BackupReference{Name: name, CompletionTime: t}}
	}
	next := func(name string, t metav1.Time) backupSummary {
		return backupSummary{NextScheduledBackup: &echov1alpha1.ScheduledBackup{Schedule: name, Time: t}}
	}
	subSecond := metav1.NewTime(t0.Add(300 * time.Millisecond))
	later := metav1.NewTime(t0.Add(time.Second))
	cases := []struct {
		name string
		a, b backupSummary
		want bool
	}{
		{"both empty", backupSummary{}, backupSummary{}, true},
		{"the same to the second", last("a", t0), last("a", subSecond), true},
		{"another backup", last("a", t0), last("b", t0), false},
		{"a later completion", last("a", t0), last("a", later), false},
		{"a backup gone", last("a", t0), backupSummary{}, false},
		{"the same next run", next("s", t0), next("s", subSecond), true},
		{"another schedule", next("s", t0), next("t", t0), false},
		{"a later run", next("s", t0), next("s", later), false},
		{"no next run any more", next("s", t0), backupSummary{}, false},
	}
	for _, tc := range cases {
		if got := tc.a.equal(tc.b); got != tc.want {
			t.Errorf("%s: equal = %v, want %v", tc.name, got, tc.want)
		}
		if got := tc.b.equal(tc.a); got != tc.want {
			t.Errorf("%s (reversed): equal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestRequestedBackupName(t *testing.T) {
	a := requestedBackupName("nightly", "2026-03-01T00:00:00Z", "100")
	if a != requestedBackupName("nightly", "2026-03-01T00:00:00Z", "100") {
		t.Error("the same request at the same resourceVersion gets another name")
	}
	if a == requestedBackupName("nightly", "2026-03-01T00:00:00Z", "101") {
		t.Error("a request made again later gets the name of the first")
	}
	if a == requestedBackupName("nightly", "2026-03-02T00:00:00Z", "100") {
		t.Error("another request gets the same name")
	}
	long := requestedBackupName("a-schedule-whose-name-is-as-long-as-a-name-may-be-0123456789abc", "now", "1")
	if len(long) > 63 {
		t.Errorf("name %q is longer than 63 characters", long)
	}
}
