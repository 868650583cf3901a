package v1alpha1

import "k8s.io/apimachinery/pkg/types"

// MoverLogLimit is the most bytes of a data mover's log that a backup's or
// restore's status keeps (MoverLog.Log): its last lines, cut at a line
// boundary. It bounds what every EchoBackup and EchoRestore adds to the
// operator's cache, whatever the mover wrote.
const MoverLogLimit = 4096

// MoverLog is the end of the log of the data mover pod whose outcome a
// backup or restore records, read when the outcome is recorded and before
// the Job and its pods are deleted: it stays readable when the Job is gone
// and when the storage is not reachable (kubectl echo logs).
type MoverLog struct {
	// Job is the name of the Job whose pod wrote the log.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Job string `json:"job"`

	// JobUID is the UID of that Job, the one recorded in jobs.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=36
	// +optional
	JobUID types.UID `json:"jobUID,omitempty"`

	// Pod is the pod the log was read from: the Job's last attempt, or
	// for a failed Job its last failed attempt. Empty when the Job had no
	// pod left to read.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Pod string `json:"pod,omitempty"`

	// Attempt is the pod's place among the pods of the Job, the first
	// being 1.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	Attempt int32 `json:"attempt,omitempty"`

	// Truncated is true when the mover wrote more than log holds: its
	// earlier lines are left out.
	// +optional
	Truncated bool `json:"truncated,omitempty"`

	// Unavailable says why the log could not be read (the pod was gone,
	// or its node did not serve the log); empty when it was read.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Unavailable string `json:"unavailable,omitempty"`

	// Log is the last lines of the mover's log, at most 4096 bytes.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Log string `json:"log,omitempty"`
}
