package controllers

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// An Echo's backups at a glance: the EchoBackup of the Echo that completed
// last, the next run of its schedules and the restore test of its
// schedules that ended last, in the Echo's status. They are
// applied with their own field manager, beside the workload status.

// BackupStatusFieldOwner is the server-side apply field manager of the
// Echo's lastSuccessfulBackup and nextScheduledBackup.
const BackupStatusFieldOwner = "echo-operator-backups"

// backupSummary is what the Echo's status says of its backups.
type backupSummary struct {
	LastSuccessfulBackup *echov1alpha1.BackupReference   `json:"lastSuccessfulBackup,omitempty"`
	NextScheduledBackup  *echov1alpha1.ScheduledBackup   `json:"nextScheduledBackup,omitempty"`
	LastRestoreTest      *echov1alpha1.RestoreTestResult `json:"lastRestoreTest,omitempty"`
}

// summarizeBackups picks, among an Echo's backups and schedules, the
// backup that completed last (not one being deleted) and the schedule
// whose next run comes first (not a suspended one). Ties go to the name
// that sorts first, so the result never depends on the list order.
func summarizeBackups(backups []echov1alpha1.EchoBackup, schedules []echov1alpha1.EchoBackupSchedule) backupSummary {
	var s backupSummary
	for i := range backups {
		b := &backups[i]
		if !backupSucceeded(*b) || b.Status.CompletionTime == nil || !b.DeletionTimestamp.IsZero() {
			continue
		}
		if last := s.LastSuccessfulBackup; last == nil ||
			cmp.Or(b.Status.CompletionTime.Compare(last.CompletionTime.Time), strings.Compare(last.Name, b.Name)) > 0 {
			s.LastSuccessfulBackup = &echov1alpha1.BackupReference{Name: b.Name, CompletionTime: *b.Status.CompletionTime}
		}
	}
	for i := range schedules {
		sc := &schedules[i]
		if sc.Spec.Suspend || sc.Status.NextScheduleTime == nil || !sc.DeletionTimestamp.IsZero() {
			continue
		}
		if next := s.NextScheduledBackup; next == nil ||
			cmp.Or(next.Time.Compare(sc.Status.NextScheduleTime.Time), strings.Compare(next.Schedule, sc.Name)) > 0 {
			s.NextScheduledBackup = &echov1alpha1.ScheduledBackup{Schedule: sc.Name, Time: *sc.Status.NextScheduleTime}
		}
	}
	s.LastRestoreTest = lastRestoreTest(schedules)
	return s
}

// lastRestoreTest is the restore test that ended last among the
// schedules', naming its schedule; ties go to the schedule name that sorts
// first.
func lastRestoreTest(schedules []echov1alpha1.EchoBackupSchedule) *echov1alpha1.RestoreTestResult {
	var last *echov1alpha1.RestoreTestResult
	for i := range schedules {
		sc := &schedules[i]
		t := sc.Status.LastRestoreTest
		if t == nil || !sc.DeletionTimestamp.IsZero() {
			continue
		}
		if last == nil || cmp.Or(t.CompletionTime.Compare(last.CompletionTime.Time), strings.Compare(last.Schedule, sc.Name)) > 0 {
			last = t.DeepCopy()
			last.Schedule = sc.Name
		}
	}
	return last
}

// currentBackupSummary is what the Echo's status says now.
func currentBackupSummary(echo *echov1alpha1.Echo) backupSummary {
	return backupSummary{LastSuccessfulBackup: echo.Status.LastSuccessfulBackup, NextScheduledBackup: echo.Status.NextScheduledBackup,
		LastRestoreTest: echo.Status.LastRestoreTest}
}

// equal compares two summaries to the second, the precision the API
// server keeps.
func (s backupSummary) equal(o backupSummary) bool {
	sameTime := func(a, b time.Time) bool { return a.Unix() == b.Unix() }
	switch a, b := s.LastSuccessfulBackup, o.LastSuccessfulBackup; {
	case (a == nil) != (b == nil):
		return false
	case a != nil && (a.Name != b.Name || !sameTime(a.CompletionTime.Time, b.CompletionTime.Time)):
		return false
	}
	switch a, b := s.NextScheduledBackup, o.NextScheduledBackup; {
	case (a == nil) != (b == nil):
		return false
	case a != nil && (a.Schedule != b.Schedule || !sameTime(a.Time.Time, b.Time.Time)):
		return false
	}
	return sameRestoreTest(s.LastRestoreTest, o.LastRestoreTest)
}

// sameRestoreTest compares two restore test results, their times to the
// second.
func sameRestoreTest(a, b *echov1alpha1.RestoreTestResult) bool {
	if a == nil || b == nil {
		return a == b
	}
	sameTime := func(a, b *metav1.Time) bool {
		return (a == nil) == (b == nil) && (a == nil || a.Unix() == b.Unix())
	}
	sameDuration := func(a, b *metav1.Duration) bool {
		return (a == nil) == (b == nil) && (a == nil || a.Duration == b.Duration)
	}
	return a.Schedule == b.Schedule && a.Restore == b.Restore && a.Backup == b.Backup && a.Outcome == b.Outcome &&
		a.Reason == b.Reason && a.Message == b.Message && sameTime(a.StartTime, b.StartTime) &&
		sameTime(&a.CompletionTime, &b.CompletionTime) && sameDuration(a.Duration, b.Duration)
}

// ensureBackupSummary applies the summary of the Echo's backups and
// schedules to its status when it changed. A field the summary no longer
// has is removed by the apply, which leaves it out.
func (r *EchoStatusReconciler) ensureBackupSummary(ctx context.Context, echo *echov1alpha1.Echo) error {
	backups := &echov1alpha1.EchoBackupList{}
	// Read only: the cache's objects are not copied, so that an Echo with
	// many backups costs a reconcile no copy of each.
	if err := r.List(ctx, backups, client.InNamespace(echo.Namespace), client.MatchingFields{backupEchoField: echo.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the backups of Echo %s: %w", echo.Name, err)
	}
	schedules := &echov1alpha1.EchoBackupScheduleList{}
	if err := r.List(ctx, schedules, client.InNamespace(echo.Namespace), client.MatchingFields{scheduleEchoField: echo.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing the backup schedules of Echo %s: %w", echo.Name, err)
	}
	desired := summarizeBackups(backups.Items, schedules.Items)
	if desired.equal(currentBackupSummary(echo)) {
		return nil
	}
	status, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&desired)
	if err != nil {
		return fmt.Errorf("converting the backup status of Echo %s: %w", echo.Name, err)
	}
	patch := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	patch.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("Echo"))
	patch.SetName(echo.Name)
	patch.SetNamespace(echo.Namespace)
	if err := r.Status().Patch(ctx, patch, client.Apply, client.FieldOwner(BackupStatusFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying the backup status of Echo %s/%s: %w", echo.Namespace, echo.Name, err)
	}
	return nil
}

// echoOfBackup maps an EchoBackup to the Echo it backs up.
func echoOfBackup(_ context.Context, o client.Object) []reconcile.Request {
	return echoRequest(o.GetNamespace(), o.(*echov1alpha1.EchoBackup).Spec.EchoName)
}

// echoOfSchedule maps an EchoBackupSchedule to the Echo it backs up.
func echoOfSchedule(_ context.Context, o client.Object) []reconcile.Request {
	return echoRequest(o.GetNamespace(), o.(*echov1alpha1.EchoBackupSchedule).Spec.Template.EchoName)
}

func echoRequest(namespace, name string) []reconcile.Request {
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: namespace, Name: name}}}
}
