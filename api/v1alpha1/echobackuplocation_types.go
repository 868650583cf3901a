package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types, reasons and Event reasons of an EchoBackupLocation.
const (
	// LocationConditionDeleting is True while a location being deleted
	// waits for what uses it (reason LocationInUse) to go.
	LocationConditionDeleting = "Deleting"
	// LocationReasonInUse: EchoBackups, schedules, restores or Echos of
	// the namespace still refer to the location.
	LocationReasonInUse = "LocationInUse"
	// EventReasonLocationInUse (Warning) is recorded on a location being
	// deleted, naming what uses it.
	EventReasonLocationInUse = LocationReasonInUse
)

// LocationFinalizer holds an EchoBackupLocation being deleted while
// anything of its namespace refers to it (storage.locationRef): an
// EchoBackup (its artifact is deleted and restored through the location),
// an EchoBackupSchedule, an unfinished EchoRestore, or an Echo whose final
// backup goes there. Like the protection of a claim in use, it keeps the
// settings those objects need from going while they need them.
const LocationFinalizer = "echo.dev/location-in-use"

// EchoBackupLocationSpec is the storage a location names.
type EchoBackupLocationSpec struct {
	// S3 is the bucket (and prefix) of the location, with the Secret of
	// this namespace that holds its credentials. Listing a
	// PersistentVolumeClaim is not supported: the operator would need a
	// Job to read it.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="S3"
	S3 S3Storage `json:"s3"`

	// Mover places and sizes the data mover's pods of the backups and
	// restores that use this location (an Echo's final backup among
	// them), for each field they do not set themselves.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Data Mover"
	Mover *MoverSettings `json:"mover,omitempty"`
}

// EchoBackupLocationStatus reports a location's deletion, held while it is
// in use.
type EchoBackupLocationStatus struct {
	// Conditions: Deleting.
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.lastTransitionTime >= timestamp('0001-01-01T00:00:00Z'))",message="conditions[].lastTransitionTime must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EchoBackupLocation names a storage location: backups, schedules and
// restores of its namespace refer to it (storage.locationRef) rather than
// repeat its settings, and `kubectl get storedbackups` (live.echo.dev)
// lists the backups it holds, read from the storage when asked for: the
// way to find what a bucket holds, for example to restore into a cluster
// that has never seen the backups. Its credentials stay in this
// namespace's Secret. It starts nothing; while anything refers to it, its
// deletion waits (LocationFinalizer).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ecbl,categories={echo-operator}
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.s3.endpoint`
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.s3.bucket`
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.s3.prefix`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="an EchoBackupLocation name must be a DNS-1123 label (at most 63 lower-case letters, digits and '-'): it begins the names of the stored backups it lists"
// +operator-sdk:csv:customresourcedefinitions:displayName="Echo Backup Location",resources={{Secret,v1},{Event,v1}}
type EchoBackupLocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EchoBackupLocationSpec `json:"spec"`
	// +optional
	Status EchoBackupLocationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EchoBackupLocationList is a list of EchoBackupLocation.
type EchoBackupLocationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EchoBackupLocation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EchoBackupLocation{}, &EchoBackupLocationList{})
}
