package controllers

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// retentionBackup is a complete backup of the given age, with deletion
// policy policy and one copy per phase given (offsite, second, ...).
func retentionBackup(now time.Time, name string, age time.Duration, policy echov1alpha1.DeletionPolicy, copies map[string]echov1alpha1.Phase) echov1alpha1.EchoBackup {
	b := echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec:       echov1alpha1.EchoBackupSpec{DeletionPolicy: policy},
		Status: echov1alpha1.EchoBackupStatus{Location: "s3://bucket/" + name,
			Conditions: []metav1.Condition{{Type: echov1alpha1.BackupConditionComplete, Status: metav1.ConditionTrue}}},
	}
	names := make([]string, 0, len(copies))
	for n := range copies {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		b.Spec.CopyTo = append(b.Spec.CopyTo, echov1alpha1.BackupCopy{Name: n})
		if copies[n] != "" {
			b.Status.Copies = append(b.Status.Copies, echov1alpha1.BackupCopyStatus{Name: n, Phase: copies[n]})
		}
	}
	return b
}

func TestPlanRetention(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	const del, retain = echov1alpha1.DeletionPolicyDelete, echov1alpha1.DeletionPolicyRetain
	done := echov1alpha1.PhaseCompleted
	five := func(policy echov1alpha1.DeletionPolicy) []echov1alpha1.EchoBackup {
		var out []echov1alpha1.EchoBackup
		for i := 1; i <= 5; i++ {
			out = append(out, retentionBackup(now, fmt.Sprintf("b%d", i), time.Duration(6-i)*time.Hour, policy, map[string]echov1alpha1.Phase{"offsite": done}))
		}
		return out
	}
	keep := func(n int32) *echov1alpha1.RetentionPolicy { return &echov1alpha1.RetentionPolicy{KeepLast: ptr.To(n)} }
	offsite := func(n int32) []echov1alpha1.CopyRetentionPolicy {
		return []echov1alpha1.CopyRetentionPolicy{{Name: "offsite", RetentionPolicy: *keep(n)}}
	}
	prunedPrimary := retentionBackup(now, "b1", 5*time.Hour, del, map[string]echov1alpha1.Phase{"offsite": done})
	prunedPrimary.Status.Conditions = append(prunedPrimary.Status.Conditions, metav1.Condition{Type: echov1alpha1.BackupConditionPruned, Status: metav1.ConditionTrue})
	prunedCopy := retentionBackup(now, "b1", 5*time.Hour, del, map[string]echov1alpha1.Phase{"offsite": echov1alpha1.PhasePruned})
	failed := retentionBackup(now, "b1", 5*time.Hour, del, map[string]echov1alpha1.Phase{"offsite": ""})
	failed.Status.Conditions = []metav1.Condition{{Type: echov1alpha1.BackupConditionFailed, Status: metav1.ConditionTrue}}
	failed.Status.Location = ""

	cases := []struct {
		name    string
		backups []echov1alpha1.EchoBackup
		spec    echov1alpha1.EchoBackupScheduleSpec
		remove  []string
		prune   map[string][]string
	}{
		{name: "copies follow the primary's retention by default: whole backups go", backups: five(del),
			spec: echov1alpha1.EchoBackupScheduleSpec{Retention: keep(2)}, remove: []string{"b3", "b2", "b1"}},
		{name: "primary keeps 2, copy keeps 4: the oldest goes, two lose their primary artifact", backups: five(del),
			spec:   echov1alpha1.EchoBackupScheduleSpec{Retention: keep(2), CopyRetention: offsite(4)},
			remove: []string{"b1"}, prune: map[string][]string{"b2": {"storage"}, "b3": {"storage"}}},
		{name: "primary keeps 4, copy keeps 2: two lose their copy", backups: five(del),
			spec:   echov1alpha1.EchoBackupScheduleSpec{Retention: keep(4), CopyRetention: offsite(2)},
			remove: []string{"b1"}, prune: map[string][]string{"b2": {"copy/offsite"}, "b3": {"copy/offsite"}}},
		{name: "only copies bounded: the primary keeps all", backups: five(del),
			spec: echov1alpha1.EchoBackupScheduleSpec{CopyRetention: offsite(3)}, prune: map[string][]string{"b1": {"copy/offsite"}, "b2": {"copy/offsite"}}},
		{name: "with Retain the EchoBackup goes only when no location keeps it, and nothing is pruned", backups: five(retain),
			spec: echov1alpha1.EchoBackupScheduleSpec{Retention: keep(2), CopyRetention: offsite(4)}, remove: []string{"b1"}},
		{name: "the newest successful backup is kept everywhere", backups: five(del)[4:],
			spec: echov1alpha1.EchoBackupScheduleSpec{Retention: &echov1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: time.Second}},
				CopyRetention: []echov1alpha1.CopyRetentionPolicy{{Name: "offsite", RetentionPolicy: echov1alpha1.RetentionPolicy{MaxAge: &metav1.Duration{Duration: time.Second}}}}}},
		{name: "a copy under way holds its backup back at every location",
			backups: append(five(del)[1:], retentionBackup(now, "b1", 5*time.Hour, del, map[string]echov1alpha1.Phase{"offsite": echov1alpha1.PhaseRunning})),
			spec:    echov1alpha1.EchoBackupScheduleSpec{Retention: keep(1), CopyRetention: offsite(1)},
			remove:  []string{"b4", "b3", "b2"}},
		{name: "a copy still to be made holds back the primary artifact it reads",
			backups: append(five(del)[1:], retentionBackup(now, "b1", 5*time.Hour, del, map[string]echov1alpha1.Phase{"offsite": ""})),
			spec:    echov1alpha1.EchoBackupScheduleSpec{Retention: keep(1), CopyRetention: offsite(10)},
			prune:   map[string][]string{"b2": {"storage"}, "b3": {"storage"}, "b4": {"storage"}}},
		{name: "a pruned primary is not pruned again; the copy's expiry then removes the backup",
			backups: append(five(del)[1:], prunedPrimary),
			spec:    echov1alpha1.EchoBackupScheduleSpec{Retention: keep(2), CopyRetention: offsite(4)},
			remove:  []string{"b1"}, prune: map[string][]string{"b2": {"storage"}, "b3": {"storage"}}},
		{name: "a pruned primary keeps the backup while its copy is kept",
			backups: append(five(del)[1:], prunedPrimary),
			spec:    echov1alpha1.EchoBackupScheduleSpec{Retention: keep(2), CopyRetention: offsite(5)},
			prune:   map[string][]string{"b2": {"storage"}, "b3": {"storage"}}},
		{name: "a pruned copy keeps nothing: the backup goes with its primary",
			backups: append(five(del)[1:], prunedCopy),
			spec:    echov1alpha1.EchoBackupScheduleSpec{Retention: keep(4), CopyRetention: offsite(2)},
			remove:  []string{"b1"}, prune: map[string][]string{"b2": {"copy/offsite"}, "b3": {"copy/offsite"}}},
		{name: "a failed backup, copied nowhere, follows the primary's retention",
			backups: append(five(del)[1:], failed),
			spec:    echov1alpha1.EchoBackupScheduleSpec{Retention: keep(4), CopyRetention: offsite(10)},
			remove:  []string{"b1"}},
		{name: "a failed copy holds nothing",
			backups: append(five(del)[1:], retentionBackup(now, "b1", 5*time.Hour, del, map[string]echov1alpha1.Phase{"offsite": echov1alpha1.PhaseFailed})),
			spec:    echov1alpha1.EchoBackupScheduleSpec{Retention: keep(4), CopyRetention: offsite(10)},
			remove:  []string{"b1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := planRetention(tc.backups, &tc.spec, now)
			var removed []string
			for _, b := range plan.remove {
				removed = append(removed, b.Name)
			}
			if !slices.Equal(removed, tc.remove) {
				t.Errorf("removed %v, want %v", removed, tc.remove)
			}
			if len(plan.prune) != len(tc.prune) {
				t.Fatalf("pruned %v, want %v", plan.prune, tc.prune)
			}
			for name, want := range tc.prune {
				if !slices.Equal(plan.prune[name], want) {
					t.Errorf("pruned %s at %v, want %v", name, plan.prune[name], want)
				}
			}
		})
	}
}

func TestWithPruned(t *testing.T) {
	b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{echov1alpha1.PruneAnnotation: "storage"}}}
	if v, changed := withPruned(b, []string{"storage"}); changed || v != "storage" {
		t.Errorf("listed again: %q, changed %v", v, changed)
	}
	if v, changed := withPruned(b, []string{"copy/offsite"}); !changed || v != "copy/offsite,storage" {
		t.Errorf("got %q, changed %v", v, changed)
	}
	if got := pruneRequested(&echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		echov1alpha1.PruneAnnotation: " storage,,copy/a, storage"}}}); !slices.Equal(got, []string{"storage", "copy/a"}) {
		t.Errorf("read %v", got)
	}
}
