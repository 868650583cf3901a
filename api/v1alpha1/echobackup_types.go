package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an EchoBackup, as batch/v1 Jobs have them: a finished
// backup has exactly one of them True.
const (
	// BackupConditionComplete is True once the artifact is stored and verified.
	BackupConditionComplete = "Complete"
	// BackupConditionFailed is True once the backup failed for good.
	BackupConditionFailed = "Failed"
	// BackupConditionCopied is set on a backup with spec.copyTo once it is
	// complete: True when every copy is stored and verified, False while
	// one is being copied (CopyRunning) or once one failed (CopyFailed,
	// naming them). It never fails the backup itself.
	BackupConditionCopied = "Copied"
	// BackupConditionPruned is True once the artifact in the backup's own
	// storage (spec.storage) was deleted under its schedule's retention
	// (PruneAnnotation), while a copy still holds it: the EchoBackup
	// stays for its copies. It is False (PruneRetained) while
	// PruneAnnotation lists locations of a backup whose deletionPolicy is
	// Retain, which prunes nothing.
	BackupConditionPruned = "Pruned"
)

// Reasons of the Pruned condition and of status.copies[].reason once a
// location was pruned.
const (
	// BackupReasonArtifactPruned: the artifact at that location was
	// deleted under the schedule's retention.
	BackupReasonArtifactPruned = "ArtifactPruned"
	// EventReasonArtifactPruned: the artifact at one location was deleted
	// under the schedule's retention.
	EventReasonArtifactPruned = BackupReasonArtifactPruned
	// BackupReasonPruneRetained: PruneAnnotation lists locations, but the
	// backup's deletionPolicy is Retain: nothing is deleted.
	BackupReasonPruneRetained = "PruneRetained"
	// EventReasonPruneRetained: a prune request is ignored under
	// deletionPolicy Retain.
	EventReasonPruneRetained = BackupReasonPruneRetained
)

// PruneAnnotation on an EchoBackup with deletionPolicy Delete lists the
// locations whose artifact is to be deleted while the EchoBackup stays
// for its other locations: PruneStorage for spec.storage and
// PruneCopyPrefix+<name> for a copy, comma-separated. A schedule sets it
// when its retention per location (spec.copyRetention) keeps a backup
// at some locations only. The operator deletes a listed copy once it
// completed, and the backup's own artifact once no copy is being made
// from it, and records each in the status (status.copies[].phase Pruned,
// the Pruned condition). With deletionPolicy Retain it deletes nothing and
// says so (Pruned=False, PruneRetained).
const PruneAnnotation = "echo.dev/prune"

// The locations of PruneAnnotation.
const (
	PruneStorage    = "storage"
	PruneCopyPrefix = "copy/"
)

// Reasons of the Copied condition and of status.copies[].reason.
const (
	// CopyReasonCopied: stored and verified at every copy's storage.
	CopyReasonCopied = "Copied"
	// CopyReasonCopying: a copy's Job is under way.
	CopyReasonCopying = "Copying"
	// CopyReasonWaitingForBackup: the backup is not complete yet.
	CopyReasonWaitingForBackup = "WaitingForBackup"
	// CopyReasonCopyFailed: at least one copy failed for good.
	CopyReasonCopyFailed = "CopyFailed"
	// CopyReasonIdentityConflict: the backup's storage and the copy's
	// use two different ServiceAccounts (storage.s3.identity), and a
	// copy's Job runs as one.
	CopyReasonIdentityConflict = "IdentityConflict"
)

// Event reasons emitted for the copies of an EchoBackup.
const (
	EventReasonCopyStarted   = "CopyStarted"
	EventReasonCopyCompleted = "CopyCompleted"
	EventReasonCopyFailed    = "CopyFailed"
	// EventReasonCopyRetried: a failed copy starts again, as
	// RetryCopyAnnotation asked.
	EventReasonCopyRetried = "CopyRetried"
)

// RetryCopyAnnotation on a complete EchoBackup lists copies (names of
// spec.copyTo, comma-separated) to make again once they failed: each one
// listed whose phase is Failed starts again from Pending, with a new Job,
// once the failed one is gone. The operator then removes the annotation;
// a name that is not a failed copy is dropped from it without effect.
const RetryCopyAnnotation = "echo.dev/retry-copy"

// Reasons of EchoBackup conditions.
const (
	BackupReasonCompleted = "Completed"
	// BackupReasonBackingUp (Complete=False): the backup's Job is running.
	BackupReasonBackingUp        = "BackingUp"
	BackupReasonEchoNotFound     = "EchoNotFound"
	BackupReasonJobFailed        = "JobFailed"
	BackupReasonStorageError     = "StorageError"
	BackupReasonCredentialsError = "CredentialsError"
	// BackupReasonEncryptionError: the storage refused the encryption of
	// storage.s3.encryption (a KMS key it does not know, no KMS).
	BackupReasonEncryptionError = "EncryptionError"
	// BackupReasonLocationUnavailable: the EchoBackupLocation that
	// storage.locationRef names does not exist, or is being deleted.
	BackupReasonLocationUnavailable = "LocationUnavailable"
	BackupReasonDeadlineExceeded    = "DeadlineExceeded"
	BackupReasonArtifactMissing     = "ArtifactMissing"
	BackupReasonArtifactDeleteErr   = "ArtifactDeleteFailed"
	// BackupReasonWaitingForRestore (Complete=False): an EchoRestore is
	// writing the Echo's data; the backup starts once it gives the Echo
	// back, so that it never captures half-restored data.
	BackupReasonWaitingForRestore = "WaitingForRestore"
)

// Event reasons emitted for an EchoBackup.
const (
	EventReasonBackupStarted        = "BackupStarted"
	EventReasonBackupCompleted      = "BackupCompleted"
	EventReasonBackupFailed         = "BackupFailed"
	EventReasonDeletingArtifact     = "DeletingArtifact"
	EventReasonArtifactDeleted      = "ArtifactDeleted"
	EventReasonArtifactDeleteFailed = BackupReasonArtifactDeleteErr
	EventReasonArtifactRetained     = "ArtifactRetained"
)

// ArtifactFinalizer holds an EchoBackup whose deletion policy is Delete
// until its artifact is deleted from the storage. The artifact lies outside
// the cluster, where no owner reference reaches: this is the only work the
// garbage collector cannot do, and the only finalizer.
const ArtifactFinalizer = "echo.dev/backup-artifact"

// Labels and annotations of an EchoBackup and of the objects it owns.
const (
	// BackupLabel marks the Jobs, pods and ConfigMap of an EchoBackup with
	// its name.
	BackupLabel = "echo.dev/backup"
	// BackupUIDAnnotation names, on a delete Job, the EchoBackup it
	// serves, for whoever reads the Job: its name alone does not, as a
	// name is reused once its EchoBackup is gone. The operator does not
	// trust it (anyone may set it): it takes only the delete Job whose UID
	// the EchoBackup's status records (status.jobs) or, with none
	// recorded, whose signature verifies for the EchoBackup's UID.
	BackupUIDAnnotation = "echo.dev/backup-uid"
	// FinalBackupOfLabel marks a final backup with the name of its Echo.
	FinalBackupOfLabel = "echo.dev/final-backup-of"
	// ScheduleLabel marks the EchoBackups a schedule created with its name.
	ScheduleLabel = "echo.dev/schedule"
	// ScheduledAtAnnotation records the run time (RFC 3339) a scheduled
	// backup was started for: retention orders and ages backups by it.
	ScheduledAtAnnotation = "echo.dev/scheduled-at"
)

// ManagedBy is the value of app.kubernetes.io/managed-by on every object
// the operator creates itself (the chart's objects say Helm).
const ManagedBy = "echo-operator"

// Compression of a backup archive.
// +kubebuilder:validation:Enum=Gzip;None
type Compression string

const (
	CompressionGzip Compression = "Gzip"
	CompressionNone Compression = "None"
)

// DeletionPolicy says what deleting an EchoBackup does to its artifact.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionPolicyRetain keeps the artifact in storage.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete deletes the artifact with the EchoBackup.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// EchoBackupSpec says which Echo to back up and where to.
//
// +kubebuilder:validation:XValidation:rule="!has(self.copyTo) || !has(self.storage.locationRef) || self.copyTo.all(c, !has(c.storage.locationRef) || c.storage.locationRef.name != self.storage.locationRef.name)",message="a copy's storage.locationRef must name another EchoBackupLocation than the backup's storage: a copy in the same storage is no second copy"
// +kubebuilder:validation:XValidation:rule="!has(self.copyTo) || !has(self.storage.s3) || !has(self.storage.s3.identity) || self.copyTo.all(c, !has(c.storage.s3) || !has(c.storage.s3.identity) || c.storage.s3.identity.serviceAccountName == self.storage.s3.identity.serviceAccountName)",message="a copy's Job runs as one ServiceAccount: the backup's storage and a copy's cannot use two different identities (storage.s3.identity); use credentialsSecretRef on one side"
type EchoBackupSpec struct {
	// EchoName names the Echo to back up, in the EchoBackup's namespace.
	// It labels the backup's Job and pods.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="echoName must be an Echo's name: a DNS-1035 label (lower-case letters, digits and '-', starting with a letter)"
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Echo"
	EchoName string `json:"echoName"`

	// Storage is where the artifact is written.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage"
	Storage BackupStorage `json:"storage"`

	// Compression of the archive.
	// +kubebuilder:default=Gzip
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Compression"
	Compression Compression `json:"compression,omitempty"`

	// DeletionPolicy says what deleting the EchoBackup does to its artifact:
	// Retain keeps it in the storage; Delete deletes it first, and the
	// EchoBackup stays until that is done.
	// +kubebuilder:default=Retain
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy"
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Mover places and sizes the pods of the backup's Jobs (the backup,
	// and the artifact deletion): each field set here wins over the
	// EchoBackupLocation's that storage.locationRef names, which wins over
	// the operator's default.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Data Mover"
	Mover *MoverSettings `json:"mover,omitempty"`

	// CopyTo lists further storages each completed backup is copied to,
	// each with its own credentials, identity and encryption: losing the
	// primary storage (its bucket, its credentials, its region) then
	// loses no backup. A copy is verified against the backup's checksum;
	// a failed copy does not fail the backup (see the Copied condition).
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.exists_one(d, d.name == c.name))",message="copyTo[].name must be unique"
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.all(d, c.name == d.name || !has(c.storage.locationRef) || !has(d.storage.locationRef) || c.storage.locationRef.name != d.storage.locationRef.name))",message="two copies must not name the same EchoBackupLocation in storage.locationRef"
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Copy To"
	CopyTo []BackupCopy `json:"copyTo,omitempty"`
}

// BackupCopy is a further storage a completed backup is copied to.
type BackupCopy struct {
	// Name identifies the copy in the status, in the name of its Job and
	// in a restore's source.copy: a DNS label, e.g. offsite.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="copyTo[].name must be a DNS label: lower-case letters, digits and '-', starting and ending with a letter or digit, e.g. offsite"
	// +required
	Name string `json:"name"`

	// Storage is where the copy is written, under the same key as the
	// backup in its primary storage: the same choices as the backup's
	// storage, usually a locationRef to an EchoBackupLocation.
	// +required
	Storage BackupStorage `json:"storage"`
}

// EchoBackupStatus is the observed state of an EchoBackup.
type EchoBackupStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The API server's date-time format lets through times that metav1.Time
	// cannot parse, such as a lower-case "t". The rules on the times of
	// this status read them in CEL, which parses them as the operator does
	// and so refuses those.

	// Phase is Pending, Running, Completed or Failed, derived from the
	// conditions.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Phase",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase"}
	Phase Phase `json:"phase,omitempty"`

	// Reason is the reason of the condition that decides the phase:
	// what the backup waits for, or why it failed.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Reason",xDescriptors={"urn:alm:descriptor:io.kubernetes.phase:reason"}
	Reason string `json:"reason,omitempty"`

	// Conditions: Complete (False while the backup waits or runs, with
	// the reason) and Failed.
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.lastTransitionTime >= timestamp('0001-01-01T00:00:00Z'))",message="conditions[].lastTransitionTime must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// StartTime is when the backup started.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Start Time"
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the backup completed.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Completion Time"
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Size of the stored archive in bytes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Size"
	Size int64 `json:"size,omitempty"`

	// Files is the number of files of the Echo's data in the archive.
	// +kubebuilder:validation:Minimum=0
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Files"
	Files int64 `json:"files,omitempty"`

	// Checksum of the stored archive, "sha256:<hex>".
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Checksum"
	Checksum string `json:"checksum,omitempty"`

	// Location of the artifact: its key in the storage.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Location"
	Location string `json:"location,omitempty"`

	// EchoGeneration is the generation of the Echo that was captured.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Echo Generation"
	EchoGeneration int64 `json:"echoGeneration,omitempty"`

	// Error says why the backup failed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Error"
	Error string `json:"error,omitempty"`

	// Jobs are the Jobs the operator created for the backup: the backup
	// Job and, while the EchoBackup is being deleted with deletionPolicy
	// Delete, the Job deleting its artifact. Another Job of one of those
	// names is not the backup's: it fails the backup, or holds up the
	// artifact's deletion until it is gone (JobNotOwned).
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Jobs"
	Jobs []JobReference `json:"jobs,omitempty"`

	// Copies is the state of each copy of spec.copyTo, by name.
	// +kubebuilder:validation:MaxItems=3
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Copies"
	Copies []BackupCopyStatus `json:"copies,omitempty"`

	// MoverLog is the end of the log of the backup Job's data mover,
	// kept once the backup finished: kubectl echo logs prints it after
	// the Job is gone.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Mover Log"
	MoverLog *MoverLog `json:"moverLog,omitempty"`
}

// BackupCopyStatus is the state of one copy of a backup.
type BackupCopyStatus struct {
	// Name of the copy in spec.copyTo.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name"`

	// Phase is Pending (the backup is not complete yet), Running (its
	// Job copies it), Completed or Failed.
	// +required
	Phase Phase `json:"phase"`

	// Key is where the copy's artifact lives in the copy's storage.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Key string `json:"key,omitempty"`

	// Checksum of the copied archive, "sha256:<hex>": the backup's.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Checksum string `json:"checksum,omitempty"`

	// Size of the copied archive in bytes.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Size int64 `json:"size,omitempty"`

	// CompletionTime is when the copy completed or failed.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// Reason is a CamelCase word saying why the copy is in its phase.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says what happened and, for a failed copy, what to fix.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Message string `json:"message,omitempty"`

	// MoverLog is the end of the log of the copy Job's data mover, kept
	// once the copy finished: kubectl echo logs NAME --copy COPY prints it
	// after the Job is gone.
	// +optional
	MoverLog *MoverLog `json:"moverLog,omitempty"`
}

// EchoBackup is a backup of one Echo: its configuration and, with
// persistence on, its data, stored as a verified archive.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ecb,categories={echo-operator}
// +kubebuilder:printcolumn:name="Echo",type=string,JSONPath=`.spec.echoName`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.status.location`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.spec == oldSelf.spec",message="an EchoBackup's spec is immutable: create a new EchoBackup instead"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="an EchoBackup name is at most 63 characters: it labels the backup's Job and pods"
// +operator-sdk:csv:customresourcedefinitions:displayName="Echo Backup",resources={{Job,v1},{ConfigMap,v1},{Secret,v1},{Event,v1}}
type EchoBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EchoBackupSpec `json:"spec"`
	// +optional
	Status EchoBackupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EchoBackupList is a list of EchoBackup.
type EchoBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EchoBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EchoBackup{}, &EchoBackupList{})
}
