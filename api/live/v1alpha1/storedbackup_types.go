package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// StoredBackupResource is the resource name of StoredBackup.
	StoredBackupResource = "storedbackups"

	// LocationLabel, on a StoredBackup, names the EchoBackupLocation it
	// was found in.
	LocationLabel = "live.echo.dev/location"
)

// StoredBackup is a backup artifact found in the storage of an
// EchoBackupLocation of the same namespace, read from the storage when it
// is asked for (and cached for a few seconds). It is not stored in etcd.
//
// Its name is <location>.<namespace>.<echo>.<backup>: the location and
// the artifact's key, whose parts are the namespace, Echo and EchoBackup
// it was taken from. An EchoRestore restores it by that name
// (spec.source.storedBackup).
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type StoredBackup struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The creation timestamp is when the backup
	// was taken; the labels name the location and the source Echo.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Location is the EchoBackupLocation holding the backup.
	Location string `json:"location"`

	// Key is the artifact's key in the location's storage, as an
	// EchoBackup's status.location ends.
	Key string `json:"key"`

	// Source is the Echo the backup was taken from.
	Source StoredBackupSource `json:"source"`

	// Size is the archive's size in bytes.
	Size int64 `json:"size"`

	// Files is the number of files of the Echo's data the backup holds.
	Files int `json:"files"`

	// FormatVersion is the version of the backup's layout; the operator
	// restores the versions it writes.
	FormatVersion int `json:"formatVersion"`

	// Verified says whether the manifest is complete and consistent with
	// the archive object (its recorded size matches the stored one) and of
	// a format this operator restores. The archive's checksum is checked
	// by a restore, not by a listing.
	Verified bool `json:"verified"`

	// Message says why Verified is false.
	// +optional
	Message string `json:"message,omitempty"`
}

// StoredBackupSource identifies the Echo a stored backup was taken from.
type StoredBackupSource struct {
	// Namespace of the Echo.
	Namespace string `json:"namespace"`
	// Name of the Echo.
	Name string `json:"name"`
	// Backup is the name of the EchoBackup that wrote the artifact.
	Backup string `json:"backup"`
}

// StoredBackupList is a list of StoredBackup.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type StoredBackupList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the stored backups, by name.
	Items []StoredBackup `json:"items"`
}
