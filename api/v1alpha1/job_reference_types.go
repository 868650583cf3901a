package v1alpha1

import "k8s.io/apimachinery/pkg/types"

// JobReference records a Job the operator created for a backup or restore:
// its name, which is deterministic (the lock against a stale cache), and the
// UID the API server gave it. Anyone who may create Jobs in the namespace
// may create one of that name first; the operator reads the outcome of the
// Job whose UID is recorded, and of no other.
type JobReference struct {
	// Name of the Job, in the namespace of the backup or restore.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`

	// UID of the Job, as the API server gave it when the operator created it.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=36
	// +required
	UID types.UID `json:"uid"`
}

// ReasonJobNotOwned is the condition and Event reason of a backup, restore
// or artifact deletion whose Job name is taken by a Job that echo-operator
// did not create for it (one that the backup or restore does not control,
// or whose UID is not the one recorded in its status). The operator neither
// reads that Job's outcome nor deletes it.
const ReasonJobNotOwned = "JobNotOwned"

// EventReasonJobNotOwned (Warning) is recorded on the backup or restore
// whose Job name is taken, naming the Job and what to do.
const EventReasonJobNotOwned = ReasonJobNotOwned
