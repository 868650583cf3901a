package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPhases(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	cases := []struct {
		name       string
		phase      func([]metav1.Condition) (Phase, string)
		conditions []metav1.Condition
		want       Phase
		wantReason string
	}{
		{"a new backup", BackupPhase, nil, PhasePending, ""},
		{"a backup held by a restore", BackupPhase,
			[]metav1.Condition{cond(BackupConditionComplete, metav1.ConditionFalse, BackupReasonWaitingForRestore)}, PhasePending, BackupReasonWaitingForRestore},
		{"a backup whose Job runs", BackupPhase,
			[]metav1.Condition{cond(BackupConditionComplete, metav1.ConditionFalse, BackupReasonBackingUp)}, PhaseRunning, BackupReasonBackingUp},
		{"a completed backup", BackupPhase,
			[]metav1.Condition{cond(BackupConditionComplete, metav1.ConditionTrue, BackupReasonCompleted)}, PhaseCompleted, BackupReasonCompleted},
		{"a failed backup that had been held", BackupPhase,
			[]metav1.Condition{
				cond(BackupConditionComplete, metav1.ConditionFalse, BackupReasonWaitingForRestore),
				cond(BackupConditionFailed, metav1.ConditionTrue, BackupReasonCredentialsError),
			}, PhaseFailed, BackupReasonCredentialsError},
		{"a restore waiting for its backup", RestorePhase,
			[]metav1.Condition{cond(RestoreConditionComplete, metav1.ConditionFalse, RestoreReasonWaitingForBackup)}, PhasePending, RestoreReasonWaitingForBackup},
		{"a restore waiting for another", RestorePhase,
			[]metav1.Condition{cond(RestoreConditionComplete, metav1.ConditionFalse, RestoreReasonWaitingForRestore)}, PhasePending, RestoreReasonWaitingForRestore},
		{"a restore writing data", RestorePhase,
			[]metav1.Condition{
				cond(RestoreConditionComplete, metav1.ConditionFalse, RestoreReasonRestoringData),
				cond(RestoreConditionFailed, metav1.ConditionFalse, ""),
			}, PhaseRunning, RestoreReasonRestoringData},
		{"a completed restore", RestorePhase,
			[]metav1.Condition{
				cond(RestoreConditionDataRestored, metav1.ConditionTrue, "DataRestored"),
				cond(RestoreConditionComplete, metav1.ConditionTrue, RestoreReasonCompleted),
			}, PhaseCompleted, RestoreReasonCompleted},
		{"a failed restore", RestorePhase,
			[]metav1.Condition{cond(RestoreConditionFailed, metav1.ConditionTrue, RestoreReasonVerifyFailed)}, PhaseFailed, RestoreReasonVerifyFailed},
	}
	for _, tc := range cases {
		if got, reason := tc.phase(tc.conditions); got != tc.want || reason != tc.wantReason {
			t.Errorf("%s: phase = %s, %q; want %s, %q", tc.name, got, reason, tc.want, tc.wantReason)
		}
	}
}
