package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an EchoRestore.
const (
	// RestoreConditionComplete is True once the Echo runs on the restored
	// data; False, with the step under way as its reason, until then.
	RestoreConditionComplete = "Complete"
	// RestoreConditionFailed is True once the restore failed for good.
	RestoreConditionFailed = "Failed"
	// RestoreConditionDataRestored is True once the data is in place (or
	// the backup holds none), before the Echo serves again.
	RestoreConditionDataRestored = "DataRestored"
)

// Reasons of the Complete condition while a restore is under way.
const (
	RestoreReasonWaitingForBackup  = "WaitingForBackup"
	RestoreReasonWaitingForRestore = "WaitingForOtherRestore"
	RestoreReasonInspecting        = "Inspecting"
	RestoreReasonQuiescing         = "Quiescing"
	RestoreReasonRestoringData     = "RestoringData"
	RestoreReasonWaitingForEcho    = "WaitingForEcho"
	RestoreReasonCompleted         = "Completed"
)

// Reasons of the Failed condition: each says what to fix.
const (
	RestoreReasonBackupNotFound   = "BackupNotFound"
	RestoreReasonBackupIncomplete = "BackupNotComplete"
	// RestoreReasonCopyUnavailable: source.copy names no copy of the
	// EchoBackup's spec.copyTo, or one that failed.
	RestoreReasonCopyUnavailable = "CopyUnavailable"
	// RestoreReasonArtifactPruned: the artifact at the location the
	// restore reads (the EchoBackup's storage, or source.copy) was pruned
	// under its schedule's retention.
	RestoreReasonArtifactPruned   = "ArtifactPruned"
	RestoreReasonArtifactNotFound = "ArtifactNotFound"
	RestoreReasonVerifyFailed     = "VerificationFailed"
	RestoreReasonCredentialsError = "CredentialsError"
	// RestoreReasonEncryptionError: the backup was written with SSE-C and
	// the restore's storage has no key, or another.
	RestoreReasonEncryptionError = "EncryptionError"
	// RestoreReasonLocationUnavailable: the EchoBackupLocation that the
	// storage's locationRef names does not exist.
	RestoreReasonLocationUnavailable = "LocationUnavailable"
	RestoreReasonStorageError        = "StorageError"
	RestoreReasonTargetHasData       = "TargetHasData"
	RestoreReasonNoVolume            = "TargetHasNoVolume"
	RestoreReasonNoSpace             = "NoSpace"
	RestoreReasonInvalidConfig       = "InvalidConfiguration"
	RestoreReasonEchoDeleted         = "EchoDeleted"
	RestoreReasonJobFailed           = "JobFailed"
	// RestoreReasonDeadlineExceeded: the restore did not complete within
	// spec.timeout.
	RestoreReasonDeadlineExceeded = "DeadlineExceeded"
)

// DefaultRestoreTimeout is the spec.timeout of a restore that sets none.
const DefaultRestoreTimeout = time.Hour

// RestoreFinalizer lets an EchoRestore being deleted give back the Echo it
// quiesced (the RestoreAnnotation on it) before it goes.
const RestoreFinalizer = "echo.dev/restore"

// Event reasons emitted for an EchoRestore.
const (
	EventReasonRestoreStarted   = "RestoreStarted"
	EventReasonEchoCreated      = "EchoCreated"
	EventReasonEchoQuiesced     = "EchoQuiesced"
	EventReasonDataRestored     = "DataRestored"
	EventReasonRestoreCompleted = "RestoreCompleted"
	EventReasonRestoreFailed    = "RestoreFailed"
	// EventReasonRestoreHoldReleased (on the Echo): the EchoRestore that
	// held the Echo no longer exists, so the operator gave the Echo back.
	EventReasonRestoreHoldReleased = "RestoreHoldReleased"
)

// RestoreLabel marks the Jobs of an EchoRestore with its name.
const RestoreLabel = "echo.dev/restore"

// RestoredFromAnnotation records, on an Echo a restore created, the
// artifact it was created from.
const RestoredFromAnnotation = "echo.dev/restored-from"

// ExistingDataPolicy says what a restore does when its target already holds data.
// +kubebuilder:validation:Enum=Fail;Replace
type ExistingDataPolicy string

const (
	// ExistingDataFail refuses to restore over data.
	ExistingDataFail ExistingDataPolicy = "Fail"
	// ExistingDataReplace restores over data, keeping the old data aside
	// in the data directory (.echo-pre-restore-<time>).
	ExistingDataReplace ExistingDataPolicy = "Replace"
)

// RestoreSource is an EchoBackup of the restore's namespace or, for a
// cluster that has none (disaster recovery), a stored backup that
// `kubectl get storedbackups` lists, or a storage location and key.
//
// +kubebuilder:validation:XValidation:rule="[has(self.backupName), has(self.storedBackup), has(self.storage)].filter(x, x).size() == 1",message="set exactly one of source.backupName, source.storedBackup and source.storage"
// +kubebuilder:validation:XValidation:rule="has(self.storage) == has(self.key)",message="source.key goes with source.storage"
// +kubebuilder:validation:XValidation:rule="!has(self.copy) || has(self.backupName)",message="source.copy names a copy of the EchoBackup of source.backupName: set source.backupName too"
type RestoreSource struct {
	// BackupName names a completed EchoBackup in the restore's namespace.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	BackupName string `json:"backupName,omitempty"`

	// Copy names a copy of the EchoBackup (an entry of its spec.copyTo):
	// the restore reads the artifact from that copy's storage rather than
	// from the backup's, once the copy has completed.
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="source.copy is the name of an entry of the EchoBackup's spec.copyTo, a DNS label"
	// +optional
	Copy string `json:"copy,omitempty"`

	// StoredBackup names a StoredBackup of the restore's namespace, as
	// `kubectl get storedbackups` lists it:
	// <location>.<namespace>.<echo>.<backup>. The restore reads it from
	// the storage of that EchoBackupLocation.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?[.][a-z0-9]([-a-z0-9]*[a-z0-9])?[.][a-z]([-a-z0-9]*[a-z0-9])?[.][a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="source.storedBackup is the name kubectl get storedbackups shows: <location>.<namespace>.<echo>.<backup>"
	// +optional
	StoredBackup string `json:"storedBackup,omitempty"`

	// Storage holding the artifact.
	// +optional
	Storage *BackupStorage `json:"storage,omitempty"`

	// Key of the artifact in Storage, as an EchoBackup's status.location gives it.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Key string `json:"key,omitempty"`
}

// EchoRestoreSpec says what to restore and into which Echo.
//
// +kubebuilder:validation:XValidation:rule="has(self.source.backupName) || has(self.source.storedBackup) || (has(self.echoName) && size(self.echoName) > 0)",message="echoName is required when restoring from source.storage: nothing else names the Echo"
type EchoRestoreSpec struct {
	// Source of the restore.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Source"
	Source RestoreSource `json:"source"`

	// EchoName is the Echo to restore into, in the restore's namespace: an
	// existing Echo is restored in place, a missing one is created from the
	// backed-up configuration. Defaults to the backed-up Echo's name when
	// the source is an EchoBackup or a stored backup; required for
	// source.storage.
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^([a-z]([-a-z0-9]*[a-z0-9])?)?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Target Echo"
	EchoName string `json:"echoName,omitempty"`

	// ExistingData says what to do when the target already holds data.
	// +kubebuilder:default=Fail
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Existing Data"
	ExistingData ExistingDataPolicy `json:"existingData,omitempty"`

	// Timeout bounds the restore, counted from status.startTime (once its
	// EchoBackup is complete): past it the restore fails with reason
	// DeadlineExceeded, its Jobs are stopped and, once their pods are gone,
	// the Echo is given back. It also bounds each data mover Job. A Go
	// duration of 1m to 720h, such as 90m or 6h.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="timeout must be a Go duration from 1m to 720h, such as 90m or 6h; units are h, m and s"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Timeout"
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Mover places and sizes the pods of the restore's Jobs (inspect and
	// restore): each field set here wins over the EchoBackupLocation's
	// that the source's storage names (its storage.locationRef, the
	// EchoBackup's, or the stored backup's location), which wins over the
	// operator's default.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Data Mover"
	Mover *MoverSettings `json:"mover,omitempty"`
}

// EchoRestoreStatus is the observed state of an EchoRestore.
type EchoRestoreStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// EchoName is the Echo restored into: spec.echoName, or the backed-up
	// Echo's name.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Echo"
	EchoName string `json:"echoName,omitempty"`

	// EchoCreated is true when the restore created the Echo from the
	// backed-up configuration rather than restoring an existing one.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Echo Created"
	EchoCreated bool `json:"echoCreated,omitempty"`

	// The API server's date-time format lets through times that metav1.Time
	// cannot parse, such as a lower-case "t". The rules on the times of
	// this status read them in CEL, which parses them as the operator does
	// and so refuses those.

	// Phase is Pending, Running, Completed or Failed, derived from the
	// conditions.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase Phase `json:"phase,omitempty"`

	// Reason is the reason of the condition that decides the phase: the
	// step under way, what the restore waits for, or why it failed.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Reason",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase:reason"}
	Reason string `json:"reason,omitempty"`

	// Conditions: Complete, Failed and DataRestored.
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.lastTransitionTime >= timestamp('0001-01-01T00:00:00Z'))",message="conditions[].lastTransitionTime must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// StartTime is when the restore started.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Start Time"
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the restore completed.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Completion Time"
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// RestoredFrom is the artifact restored, "<storage>/<key>".
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Restored From"
	RestoredFrom string `json:"restoredFrom,omitempty"`

	// Error says why the restore failed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Error"
	Error string `json:"error,omitempty"`

	// Jobs are the Jobs the operator created for the restore: the inspect
	// Job and the restore Job. Another Job of one of those names is not
	// the restore's: it fails the restore (JobNotOwned).
	// +kubebuilder:validation:MaxItems=2
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Jobs"
	Jobs []JobReference `json:"jobs,omitempty"`

	// MoverLog is the end of the log of the data mover of the last of the
	// restore's Jobs to finish (inspect, then restore), kept when the
	// restore records its outcome: kubectl echo logs prints it after the
	// Jobs are gone.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Mover Log"
	MoverLog *MoverLog `json:"moverLog,omitempty"`
}

// EchoRestore restores an Echo from a backup: in place, into a new Echo,
// or into a cluster that has never seen it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ecr,categories={echo-operator}
// +kubebuilder:printcolumn:name="Echo",type=string,JSONPath=`.status.echoName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="From",type=string,JSONPath=`.status.restoredFrom`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="an EchoRestore name is at most 63 characters: it labels the restore's Jobs and pods"
// +kubebuilder:validation:XValidation:rule="self.spec == oldSelf.spec",message="an EchoRestore's spec is immutable: create a new EchoRestore instead"
// +operator-sdk:csv:customresourcedefinitions:displayName="Echo Restore",resources={{Echo,v1alpha1,echoes},{Job,v1},{PersistentVolumeClaim,v1},{Event,v1}}
type EchoRestore struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EchoRestoreSpec `json:"spec"`
	// +optional
	Status EchoRestoreStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EchoRestoreList is a list of EchoRestore.
type EchoRestoreList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EchoRestore `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EchoRestore{}, &EchoRestoreList{})
}
