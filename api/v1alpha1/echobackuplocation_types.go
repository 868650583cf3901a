package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EchoBackupLocationSpec names the storage a location lists.
type EchoBackupLocationSpec struct {
	// S3 is the bucket (and prefix) whose backups the location lists,
	// with the Secret of this namespace that holds its credentials.
	// Listing a PersistentVolumeClaim is not supported: the operator
	// would need a Job to read it.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="S3"
	S3 S3Storage `json:"s3"`
}

// EchoBackupLocationStatus is empty: nothing is recorded on a location,
// which is read when its backups are listed.
// +kubebuilder:validation:MaxProperties=0
type EchoBackupLocationStatus struct {
	// No field: the status exists for the operator-sdk CLI, whose CSV
	// generator requires one on every kind of PROJECT.
}

// EchoBackupLocation names a storage location whose backups
// `kubectl get storedbackups` lists (live.echo.dev), read from the storage
// when asked for: the way to find what a bucket holds, for example to
// restore into a cluster that has never seen the backups. Its credentials
// stay in this namespace's Secret. It starts nothing, and its status stays
// empty.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ecbl,categories={echo-operator}
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.s3.endpoint`
// +kubebuilder:printcolumn:name="Bucket",type=string,JSONPath=`.spec.s3.bucket`
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.s3.prefix`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="an EchoBackupLocation name must be a DNS-1123 label (at most 63 lower-case letters, digits and '-'): it begins the names of the stored backups it lists"
// +operator-sdk:csv:customresourcedefinitions:displayName="Echo Backup Location",resources={{Secret,v1}}
type EchoBackupLocation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EchoBackupLocationSpec `json:"spec"`
	// +optional
	Status *EchoBackupLocationStatus `json:"status,omitempty"`
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
