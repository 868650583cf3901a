package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func cond(t, status, reason string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason}
}

func at(sec int64) *metav1.Time { return &metav1.Time{Time: time.Unix(sec, 0)} }

func TestCollector(t *testing.T) {
	echo := func(ns, name string, ready ...metav1.Condition) client.Object {
		return &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Status: echov1alpha1.EchoStatus{Conditions: ready}}
	}
	backup := func(ns, name, echoName string, completed *metav1.Time, conds ...metav1.Condition) client.Object {
		return &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:   echov1alpha1.EchoBackupSpec{EchoName: echoName},
			Status: echov1alpha1.EchoBackupStatus{Conditions: conds, CompletionTime: completed}}
	}
	schedule := func(ns, name, echoName string, suspend bool, last, next *metav1.Time) client.Object {
		return &echov1alpha1.EchoBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:   echov1alpha1.EchoBackupScheduleSpec{Suspend: suspend, Template: echov1alpha1.EchoBackupSpec{EchoName: echoName}},
			Status: echov1alpha1.EchoBackupScheduleStatus{LastScheduleTime: last, NextScheduleTime: next}}
	}
	complete := cond(echov1alpha1.BackupConditionComplete, "True", "Completed")
	failed := cond(echov1alpha1.BackupConditionFailed, "True", "StorageError")
	objs := []client.Object{
		echo("a", "web", cond(echov1alpha1.EchoConditionReady, "True", echov1alpha1.EchoReasonAvailable)),
		echo("a", "api", cond(echov1alpha1.EchoConditionReady, "True", echov1alpha1.EchoReasonAvailable)),
		echo("b", "web", cond(echov1alpha1.EchoConditionReady, "False", echov1alpha1.EchoReasonReleaseFailed)),
		echo("b", "new"),
		// The newest complete backup and the newest failed one count.
		backup("a", "web-1", "web", at(1000), complete),
		backup("a", "web-2", "web", at(3000), complete),
		backup("a", "web-3", "web", at(5000), failed),
		backup("a", "web-0", "web", at(500), failed),
		backup("a", "api-1", "api", nil),
		// Same Echo name, another namespace: its own series.
		backup("b", "web-1", "web", at(2000), complete),
		// Copies count by name: the newest completed and the newest failed.
		withCopies(backup("a", "web-4", "web", at(6000), complete),
			echov1alpha1.BackupCopyStatus{Name: "offsite", Phase: echov1alpha1.PhaseCompleted, CompletionTime: at(6100)},
			echov1alpha1.BackupCopyStatus{Name: "second", Phase: echov1alpha1.PhaseFailed, CompletionTime: at(6200)},
			echov1alpha1.BackupCopyStatus{Name: "third", Phase: echov1alpha1.PhaseRunning},
			// A pruned copy completed before.
			echov1alpha1.BackupCopyStatus{Name: "pruned", Phase: echov1alpha1.PhasePruned, CompletionTime: at(6300)}),
		withCopies(backup("a", "web-5", "web", at(7000), complete),
			echov1alpha1.BackupCopyStatus{Name: "offsite", Phase: echov1alpha1.PhaseFailed, CompletionTime: at(7100)},
			echov1alpha1.BackupCopyStatus{Name: "second", Phase: echov1alpha1.PhaseCompleted, CompletionTime: at(7200)}),
		// The soonest next run and the latest last run of the unsuspended
		// schedules of an Echo count.
		schedule("a", "hourly", "web", false, at(3600), at(7200)),
		schedule("a", "daily", "web", false, at(0), at(86400)),
		schedule("a", "paused", "web", true, at(4000), at(4600)),
		schedule("a", "api", "api", true, at(3600), at(3600)),
		schedule("b", "new", "web", false, nil, at(9000)),
		&echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "back"},
			Status: echov1alpha1.EchoRestoreStatus{Conditions: []metav1.Condition{
				cond(echov1alpha1.RestoreConditionComplete, "False", "RestoringData")}}},
	}
	c := NewCollector(fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).Build())

	want := `
# HELP echo_operator_backup_last_success_timestamp_seconds When the newest complete backup of an Echo completed (Unix time); one series per Echo with a complete EchoBackup.
# TYPE echo_operator_backup_last_success_timestamp_seconds gauge
echo_operator_backup_last_success_timestamp_seconds{echo="web",namespace="a"} 7000
echo_operator_backup_last_success_timestamp_seconds{echo="web",namespace="b"} 2000
# HELP echo_operator_backup_last_failure_timestamp_seconds When the newest failed backup of an Echo failed (Unix time); one series per Echo with a failed EchoBackup.
# TYPE echo_operator_backup_last_failure_timestamp_seconds gauge
echo_operator_backup_last_failure_timestamp_seconds{echo="web",namespace="a"} 5000
# HELP echo_operator_backup_copy_last_success_timestamp_seconds When the newest completed copy (spec.copyTo) of an Echo's backups completed (Unix time), by copy name; one series per Echo and copy with a completed copy.
# TYPE echo_operator_backup_copy_last_success_timestamp_seconds gauge
echo_operator_backup_copy_last_success_timestamp_seconds{copy="offsite",echo="web",namespace="a"} 6100
echo_operator_backup_copy_last_success_timestamp_seconds{copy="pruned",echo="web",namespace="a"} 6300
echo_operator_backup_copy_last_success_timestamp_seconds{copy="second",echo="web",namespace="a"} 7200
# HELP echo_operator_backup_copy_last_failure_timestamp_seconds When the newest failed copy (spec.copyTo) of an Echo's backups failed (Unix time), by copy name; one series per Echo and copy with a failed copy.
# TYPE echo_operator_backup_copy_last_failure_timestamp_seconds gauge
echo_operator_backup_copy_last_failure_timestamp_seconds{copy="offsite",echo="web",namespace="a"} 7100
echo_operator_backup_copy_last_failure_timestamp_seconds{copy="second",echo="web",namespace="a"} 6200
# HELP echo_operator_backup_last_scheduled_timestamp_seconds When the latest scheduled backup of an Echo was due (Unix time), the latest of its unsuspended EchoBackupSchedules; one series per Echo with one that has run.
# TYPE echo_operator_backup_last_scheduled_timestamp_seconds gauge
echo_operator_backup_last_scheduled_timestamp_seconds{echo="web",namespace="a"} 3600
# HELP echo_operator_backup_next_scheduled_timestamp_seconds When the next scheduled backup of an Echo is due (Unix time), the soonest of its unsuspended EchoBackupSchedules; one series per Echo with one.
# TYPE echo_operator_backup_next_scheduled_timestamp_seconds gauge
echo_operator_backup_next_scheduled_timestamp_seconds{echo="web",namespace="a"} 7200
echo_operator_backup_next_scheduled_timestamp_seconds{echo="web",namespace="b"} 9000
# HELP echo_operator_backups EchoBackups by state: complete, failed or running.
# TYPE echo_operator_backups gauge
echo_operator_backups{state="complete"} 5
echo_operator_backups{state="failed"} 2
echo_operator_backups{state="running"} 1
# HELP echo_operator_echoes Echoes by the status and reason of their Ready condition.
# TYPE echo_operator_echoes gauge
echo_operator_echoes{ready="False",reason="ReleaseFailed"} 1
echo_operator_echoes{ready="True",reason="Available"} 2
echo_operator_echoes{ready="Unknown",reason="Unknown"} 1
# HELP echo_operator_restores EchoRestores by state: complete, failed or running.
# TYPE echo_operator_restores gauge
echo_operator_restores{state="complete"} 0
echo_operator_restores{state="failed"} 0
echo_operator_restores{state="running"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// withCopies gives the backup b these copies' statuses.
func withCopies(b client.Object, copies ...echov1alpha1.BackupCopyStatus) client.Object {
	b.(*echov1alpha1.EchoBackup).Status.Copies = copies
	return b
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	sch := runtime.NewScheme()
	if err := echov1alpha1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	return sch
}
