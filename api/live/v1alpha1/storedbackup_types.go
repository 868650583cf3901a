package v1alpha1

import (
	"regexp"
	"strings"

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

// StoredBackupName is the name of the StoredBackup that the location lists
// for the artifact under key, or false for a key that is not of the form
// the operator writes (<namespace>/<echo>/<backup>).
func StoredBackupName(location, key string) (string, bool) {
	parts := strings.Split(key, "/")
	if len(parts) != 3 || !dnsLabel.MatchString(parts[0]) || !echoName.MatchString(parts[1]) || !backupName.MatchString(parts[2]) {
		return "", false
	}
	return location + "." + strings.Join(parts, "."), true
}

// ParseStoredBackupName splits a StoredBackup's name into its location and
// the artifact's key; false for a name StoredBackupName does not give.
func ParseStoredBackupName(name string) (location, key string, ok bool) {
	parts := strings.SplitN(name, ".", 4)
	if len(parts) != 4 || !dnsLabel.MatchString(parts[0]) {
		return "", "", false
	}
	key = strings.Join(parts[1:], "/")
	if again, ok := StoredBackupName(parts[0], key); !ok || again != name {
		return "", "", false
	}
	return parts[0], key, true
}

var (
	// A namespace or location name.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// An Echo name: a DNS-1035 label.
	echoName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	// An EchoBackup name: a DNS-1123 subdomain.
	backupName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)
