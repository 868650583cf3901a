package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestParseScheduleAndLastDueTime(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name, spec, zone string
		since, now       time.Time
		want             time.Time // zero: nothing due
	}{
		{"nothing due yet", "0 2 * * *", "", at("2026-01-01T02:30:00Z"), at("2026-01-02T01:59:59Z"), time.Time{}},
		{"daily at two in UTC", "0 2 * * *", "", at("2026-01-01T02:30:00Z"), at("2026-01-02T03:00:00Z"), at("2026-01-02T02:00:00Z")},
		{"daily at two in Paris", "0 2 * * *", "Europe/Paris", at("2026-01-01T02:30:00Z"), at("2026-01-02T03:00:00Z"), at("2026-01-02T01:00:00Z")},
		{"missed runs collapse into the latest", "@hourly", "", at("2026-01-01T00:00:00Z"), at("2026-01-01T05:30:00Z"), at("2026-01-01T05:00:00Z")},
		{"a run time equal to now is due", "*/15 * * * *", "", at("2026-01-01T00:00:00Z"), at("2026-01-01T00:15:00Z"), at("2026-01-01T00:15:00Z")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := parseSchedule(tc.spec, tc.zone)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := lastDueTime(sched, tc.since, tc.now)
			if ok != !tc.want.IsZero() || !got.Equal(tc.want) {
				t.Errorf("lastDueTime = %v, %v; want %v", got, ok, tc.want)
			}
		})
	}

	for spec, zone := range map[string]string{"0 25 * * *": "", "@daily": "Mars/Olympus_Mons", "CRON_TZ=UTC @daily": ""} {
		if _, err := parseSchedule(spec, zone); err == nil {
			t.Errorf("parseSchedule(%q, %q) accepted it", spec, zone)
		}
	}
}

func TestBackupsToPrune(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	backup := func(name string, age time.Duration, cond string) echov1alpha1.EchoBackup {
		b := echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		if cond != "" {
			b.Status.Conditions = []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue}}
		}
		return b
	}
	const ok, failed = echov1alpha1.BackupConditionComplete, echov1alpha1.BackupConditionFailed
	deleting := backup("deleting", 30*time.Minute, ok)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	backups := []echov1alpha1.EchoBackup{
		backup("running", time.Minute, ""),
		deleting, // neither the newest success nor pruned again
		backup("d1", 24*time.Hour, failed),
		backup("d2", 48*time.Hour, ok),
		backup("d3", 72*time.Hour, ok),
		backup("d9", 9*24*time.Hour, ok),
	}
	cases := []struct {
		name   string
		policy *echov1alpha1.RetentionPolicy
		want   []string
	}{
		{"no policy", nil, nil},
		{"keep the last two finished", &echov1alpha1.RetentionPolicy{KeepLast: ptr.To[int32](2)}, []string{"d3", "d9"}},
		{"keep a week", &echov1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: 7 * 24 * time.Hour}}, []string{"d9"}},
		{"keep one: the newest success survives a newer failure", &echov1alpha1.RetentionPolicy{KeepLast: ptr.To[int32](1)}, []string{"d3", "d9"}},
		{"keep a day: the newest success survives its age", &echov1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: time.Hour}},
			[]string{"d1", "d3", "d9"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, b := range backupsToPrune(backups, tc.policy, now) {
				got = append(got, b.Name)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("pruned %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("pruned %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// Backups a schedule starts in quick succession share a creation second;
// their run times, not their creation or list order, decide which are newest.
func TestScheduledBackupsOrderByRunTime(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	completed := ptr.To(created)
	backup := func(name, runTime string) echov1alpha1.EchoBackup {
		return echov1alpha1.EchoBackup{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created,
				Annotations: map[string]string{echov1alpha1.ScheduledAtAnnotation: runTime}},
			Status: echov1alpha1.EchoBackupStatus{CompletionTime: completed, Conditions: []metav1.Condition{
				{Type: echov1alpha1.BackupConditionComplete, Status: metav1.ConditionTrue}}},
		}
	}
	// Names sort the other way from run times, so neither order can pass by luck.
	backups := []echov1alpha1.EchoBackup{
		backup("c-oldest", "2026-02-28T01:00:00Z"),
		backup("a-newest", "2026-02-28T07:00:00Z"),
		backup("b-middle", "2026-02-28T06:00:00Z"),
	}
	for range 3 {
		pruned := backupsToPrune(backups, &echov1alpha1.RetentionPolicy{KeepLast: ptr.To[int32](2)}, created.Time)
		if len(pruned) != 1 || pruned[0].Name != "c-oldest" {
			t.Fatalf("pruned %v, want only c-oldest", pruned)
		}
		s := &echov1alpha1.EchoBackupSchedule{}
		recordLastSuccess(s, backups)
		if s.Status.LastSuccessfulBackup != "a-newest" {
			t.Fatalf("last successful backup = %q, want a-newest", s.Status.LastSuccessfulBackup)
		}
		backups = append(backups[1:], backups[0]) // rotate the list order
	}

	aged := backupsToPrune(backups, &echov1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: 12 * time.Hour}},
		time.Date(2026, 2, 28, 14, 0, 0, 0, time.UTC))
	if len(aged) != 1 || aged[0].Name != "c-oldest" {
		t.Fatalf("maxAge pruned %v, want only c-oldest (aged by run time)", aged)
	}
}
