package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestCollectorRestoreTests(t *testing.T) {
	schedule := func(ns, name string, rt *echov1alpha1.RestoreTestSpec, status echov1alpha1.EchoBackupScheduleStatus) client.Object {
		return &echov1alpha1.EchoBackupSchedule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: *at(100)},
			Spec:       echov1alpha1.EchoBackupScheduleSpec{RestoreTest: rt, Template: echov1alpha1.EchoBackupSpec{EchoName: "web"}},
			Status:     status,
		}
	}
	weekly := &echov1alpha1.RestoreTestSpec{Schedule: "@weekly"}
	objs := []client.Object{
		// Tested, last test failed after an earlier success.
		schedule("a", "nightly", weekly, echov1alpha1.EchoBackupScheduleStatus{
			LastSuccessfulRestoreTestTime: at(5000),
			LastRestoreTest: &echov1alpha1.RestoreTestResult{Outcome: echov1alpha1.RestoreTestFailed, Reason: "DeadlineExceeded",
				CompletionTime: *at(9000)},
		}),
		// Never tested yet.
		schedule("b", "fresh", weekly, echov1alpha1.EchoBackupScheduleStatus{}),
		// Suspended restore tests keep their results but are not expected to run.
		schedule("b", "paused", &echov1alpha1.RestoreTestSpec{Schedule: "@weekly", Suspend: true}, echov1alpha1.EchoBackupScheduleStatus{
			LastSuccessfulRestoreTestTime: at(7000),
			LastRestoreTest: &echov1alpha1.RestoreTestResult{Outcome: echov1alpha1.RestoreTestSucceeded, Reason: "Verified",
				CompletionTime: *at(7000)},
		}),
		// No restore test at all.
		schedule("b", "plain", nil, echov1alpha1.EchoBackupScheduleStatus{}),
	}
	c := NewCollector(fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).Build())
	want := `
# HELP echo_operator_restore_test_last_success_timestamp_seconds When the last successful restore test of an EchoBackupSchedule ended (Unix time); one series per schedule with one.
# TYPE echo_operator_restore_test_last_success_timestamp_seconds gauge
echo_operator_restore_test_last_success_timestamp_seconds{namespace="a",schedule="nightly"} 5000
echo_operator_restore_test_last_success_timestamp_seconds{namespace="b",schedule="paused"} 7000
# HELP echo_operator_restore_test_last_outcome The outcome (Succeeded, Failed or Skipped) and reason of the restore test of an EchoBackupSchedule that ended last, always 1; one series per schedule with one.
# TYPE echo_operator_restore_test_last_outcome gauge
echo_operator_restore_test_last_outcome{namespace="a",outcome="Failed",reason="DeadlineExceeded",schedule="nightly"} 1
echo_operator_restore_test_last_outcome{namespace="b",outcome="Succeeded",reason="Verified",schedule="paused"} 1
# HELP echo_operator_restore_test_schedule_created_timestamp_seconds When an EchoBackupSchedule whose restore tests are not suspended was created (Unix time); one series per such schedule.
# TYPE echo_operator_restore_test_schedule_created_timestamp_seconds gauge
echo_operator_restore_test_schedule_created_timestamp_seconds{namespace="a",schedule="nightly"} 100
echo_operator_restore_test_schedule_created_timestamp_seconds{namespace="b",schedule="fresh"} 100
`
	names := []string{"echo_operator_restore_test_last_success_timestamp_seconds", "echo_operator_restore_test_last_outcome",
		"echo_operator_restore_test_schedule_created_timestamp_seconds"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	if problems, err := testutil.CollectAndLint(c, names...); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
