package v1alpha1

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Phase is where an EchoBackup or EchoRestore is in its life, for people
// reading `kubectl get`: the conditions say the same for programs, and the
// phase is derived from them (PhaseOf).
// +kubebuilder:validation:Enum=Pending;Running;Completed;Failed;Pruned
type Phase string

const (
	// PhasePending: not started yet, waiting for something the reason
	// names (a restore holding the Echo, a backup still running, a
	// storage Secret that does not exist yet, a node for the data mover's
	// pod).
	PhasePending Phase = "Pending"
	// PhaseRunning: its Job or its steps are under way.
	PhaseRunning Phase = "Running"
	// PhaseCompleted: done; the Complete condition is True.
	PhaseCompleted Phase = "Completed"
	// PhaseFailed: failed for good; the Failed condition is True and its
	// reason and message say what to fix.
	PhaseFailed Phase = "Failed"
	// PhasePruned, of a copy only (status.copies[].phase): it completed,
	// then its artifact was deleted under its schedule's retention
	// (PruneAnnotation).
	PhasePruned Phase = "Pruned"
)

// PhaseOf derives the phase and its short reason from the Complete and
// Failed conditions of a backup or restore (both kinds name them alike): Failed or Completed once one
// of them is True; while Complete is False, Pending when its reason is one
// of waiting, else Running; Pending before any condition is set.
func PhaseOf(conditions []metav1.Condition, waiting ...string) (Phase, string) {
	if c := meta.FindStatusCondition(conditions, BackupConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		return PhaseFailed, c.Reason
	}
	c := meta.FindStatusCondition(conditions, BackupConditionComplete)
	switch {
	case c == nil:
		return PhasePending, ""
	case c.Status == metav1.ConditionTrue:
		return PhaseCompleted, c.Reason
	case slices.Contains(waiting, c.Reason):
		return PhasePending, c.Reason
	default:
		return PhaseRunning, c.Reason
	}
}

// BackupPhase is the phase of an EchoBackup with these conditions.
func BackupPhase(conditions []metav1.Condition) (Phase, string) {
	return PhaseOf(conditions, BackupReasonWaitingForRestore, ReasonSecretNotFound, ReasonMoverUnschedulable)
}

// RestorePhase is the phase of an EchoRestore with these conditions.
func RestorePhase(conditions []metav1.Condition) (Phase, string) {
	return PhaseOf(conditions, RestoreReasonWaitingForBackup, RestoreReasonWaitingForRestore, ReasonSecretNotFound, ReasonMoverUnschedulable)
}
