package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types and reasons of an EchoBackupSchedule.
const (
	// ScheduleConditionReady is True while the schedule is valid and running.
	ScheduleConditionReady = "Ready"

	ScheduleReasonScheduled       = "Scheduled"
	ScheduleReasonSuspended       = "Suspended"
	ScheduleReasonInvalidSchedule = "InvalidSchedule"
	// ScheduleReasonBackupNotStarted: the API server refused the EchoBackup
	// of a due run (a ResourceQuota, an admission policy); the schedule
	// retries it.
	ScheduleReasonBackupNotStarted = "BackupNotStarted"
)

// Event reasons emitted for an EchoBackupSchedule.
const (
	EventReasonScheduledBackup  = "ScheduledBackup"
	EventReasonPrunedBackup     = "PrunedBackup"
	EventReasonInvalidSchedule  = "InvalidSchedule"
	EventReasonBackupNotStarted = ScheduleReasonBackupNotStarted
	// EventReasonBackupRequested: a backup was started on request
	// (BackupNowAnnotation).
	EventReasonBackupRequested = "BackupRequested"
)

// Restore tests (spec.restoreTest).
const (
	// ScheduleConditionRestoreTestReady is True while the schedule's
	// restore tests can run; False, with a reason that says what to fix,
	// when they cannot. Absent without spec.restoreTest.
	ScheduleConditionRestoreTestReady = "RestoreTestReady"
	// ScheduleReasonScratchEchoTaken: an Echo that no restore test created
	// has the scratch Echo's name; the operator never touches it.
	ScheduleReasonScratchEchoTaken = "ScratchEchoTaken"

	// Reasons of a restore test's result besides the failure reasons of
	// its EchoRestore (RestoreReason...).
	RestoreTestReasonVerified          = "Verified"
	RestoreTestReasonNoCompletedBackup = "NoCompletedBackup"
	RestoreTestReasonScratchEchoTaken  = ScheduleReasonScratchEchoTaken
	RestoreTestReasonDeadlineExceeded  = "DeadlineExceeded"
	RestoreTestReasonRestoreDeleted    = "RestoreDeleted"

	EventReasonRestoreTestStarted = "RestoreTestStarted"
	// EventReasonRestoreTestRequested: a restore test was started on
	// request (RestoreTestNowAnnotation).
	EventReasonRestoreTestRequested = "RestoreTestRequested"
	EventReasonRestoreTestSucceeded = "RestoreTestSucceeded"
	EventReasonRestoreTestFailed    = "RestoreTestFailed"
	EventReasonRestoreTestSkipped   = "RestoreTestSkipped"
	EventReasonScratchEchoTaken     = ScheduleReasonScratchEchoTaken
)

// RestoreTestOfLabel marks the EchoRestore of a restore test, and the
// scratch Echo it restores into, with the name of the EchoBackupSchedule
// whose test it is.
const RestoreTestOfLabel = "echo.dev/restore-test-of"

// RestoreTestStartedAnnotation records, on the EchoRestore of a restore
// test, when the test started (RFC 3339): its deadline counts from there.
const RestoreTestStartedAnnotation = "echo.dev/restore-test-started-at"

// RestoreTestNowAnnotation on an EchoBackupSchedule asks for a restore
// test now, whatever its value (the time of the request is a good one),
// and even while spec.restoreTest is suspended or absent (the test then
// has the default timeout). The operator starts one test per request, as
// soon as no other test of the schedule is under way, records the value
// on the test's EchoRestore (RestoreTestRequestAnnotation), then removes
// the annotation. The cron's run times are left alone.
const RestoreTestNowAnnotation = "echo.dev/restore-test-now"

// RestoreTestRequestAnnotation records, on the EchoRestore of a restore
// test started on request, the value of the RestoreTestNowAnnotation it
// honours, so that the request is honoured once.
const RestoreTestRequestAnnotation = "echo.dev/restore-test-request"

// DefaultRestoreTestTimeout is the spec.restoreTest.timeout of a schedule
// that sets none.
const DefaultRestoreTestTimeout = 30 * time.Minute

// RestoreTestOutcome is how a restore test ended.
// +kubebuilder:validation:Enum=Succeeded;Failed;Skipped
type RestoreTestOutcome string

const (
	// RestoreTestSucceeded: the backup restored into the scratch Echo,
	// whose data read back matches the backup's manifest, became Ready.
	RestoreTestSucceeded RestoreTestOutcome = "Succeeded"
	// RestoreTestFailed: the restore failed, the data did not match, the
	// scratch Echo did not become Ready within the timeout, or the
	// scratch Echo's name is taken.
	RestoreTestFailed RestoreTestOutcome = "Failed"
	// RestoreTestSkipped: the schedule had no completed backup to test.
	RestoreTestSkipped RestoreTestOutcome = "Skipped"
)

// RestoreTestSpec tests, on its own cron schedule, that the schedule's
// newest completed backup restores: into a scratch Echo of the same
// namespace, named <echo>-restoretest, that serves nothing outside the
// cluster, runs one replica and takes no final backup. It is removed once
// the test is over, whatever its outcome.
type RestoreTestSpec struct {
	// Schedule of the restore tests, in the format and time zone of
	// spec.schedule.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every ([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+|((\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*)( ((\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*)){4})$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('@every ') || (self.substring(7).matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self.substring(7)) >= duration('1m'))",message="an @every interval must be a Go duration of at least 1m, such as @every 5m or @every 1h30m"
	// +required
	Schedule string `json:"schedule"`

	// Timeout bounds a restore test, from its start until the scratch
	// Echo serves the restored data: past it the test fails with reason
	// DeadlineExceeded and is cleaned up. A Go duration of 1m to 24h.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="restoreTest.timeout must be a Go duration from 1m to 24h, such as 30m or 2h; units are h, m and s"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops new restore tests from starting; one under way
	// finishes.
	// +kubebuilder:default=false
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// RestoreTestResult is the result of a restore test.
type RestoreTestResult struct {
	// Schedule is the EchoBackupSchedule that ran the test (in an Echo's
	// status).
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// Restore is the EchoRestore that ran it.
	// +optional
	Restore string `json:"restore,omitempty"`
	// Backup is the EchoBackup tested.
	// +optional
	Backup string `json:"backup,omitempty"`
	// StartTime is when the test started.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when it ended.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +required
	CompletionTime metav1.Time `json:"completionTime"`
	// Outcome is Succeeded, Failed or Skipped.
	// +required
	Outcome RestoreTestOutcome `json:"outcome"`
	// Reason is a CamelCase word for the outcome.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message says what happened and, on failure, what to fix.
	// +kubebuilder:validation:MaxLength=32768
	// +optional
	Message string `json:"message,omitempty"`
	// Duration is how long the test took: a Go duration, which CEL
	// parses as the operator does.
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) >= duration('0s')",message="duration must be a Go duration such as 4m30s"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// BackupNowAnnotation on an EchoBackupSchedule asks for a backup now, from
// the schedule's template, whatever its value (the time of the request is
// a good one), and even while the schedule is suspended. The operator
// starts one EchoBackup per request, named <schedule>-now-<hash>, then
// removes the annotation. The backup is the schedule's like any other:
// its retention counts and prunes it.
const BackupNowAnnotation = "echo.dev/backup-now"

// EchoBackupScheduleSpec says when to back up an Echo and how many backups to keep.
//
// +kubebuilder:validation:XValidation:rule="!has(self.retention) || has(self.retention.keepLast) || has(self.retention.maxAge)",message="retention needs keepLast, maxAge or both"
// +kubebuilder:validation:XValidation:rule="!has(self.copyRetention) || self.copyRetention.all(r, has(self.template.copyTo) && self.template.copyTo.exists(c, c.name == r.name))",message="copyRetention[].name must name a copy of template.copyTo"
type EchoBackupScheduleSpec struct {
	// Schedule in cron format: five fields (minute hour day-of-month month
	// day-of-week), or @hourly, @daily, @weekly, @monthly, @yearly, or
	// "@every <duration>" with a duration of at least 1m. It is read in
	// TimeZone.
	//
	// Every run starts a backup Job: intervals under a minute, which would
	// flood the namespace with Jobs, are refused.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every ([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+|((\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*)( ((\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?(,(\*|\?|[0-9A-Za-z]+(-[0-9A-Za-z]+)?)(/[0-9]+)?)*)){4})$`
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('@every ') || (self.substring(7).matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self.substring(7)) >= duration('1m'))",message="an @every interval must be a Go duration of at least 1m, such as @every 5m or @every 1h30m"
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Schedule"
	Schedule string `json:"schedule"`

	// TimeZone is the IANA time zone the schedule is read in, e.g.
	// "Europe/Paris". Defaults to UTC, whatever the operator's own zone.
	// +kubebuilder:default="UTC"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+/-]*$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Time Zone"
	TimeZone string `json:"timeZone,omitempty"`

	// Suspend stops new backups from being started; running ones finish.
	// +kubebuilder:default=false
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Suspend",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Suspend bool `json:"suspend,omitempty"`

	// Retention bounds the history: older backups made by this schedule,
	// and their artifacts, are pruned.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Retention"
	Retention *RetentionPolicy `json:"retention,omitempty"`

	// RestoreTest restores the newest completed backup of this schedule
	// into a scratch Echo on its own schedule, to prove that it restores.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Restore Test"
	RestoreTest *RestoreTestSpec `json:"restoreTest,omitempty"`

	// Template of the EchoBackups the schedule creates.
	// +required
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Template"
	Template EchoBackupSpec `json:"template"`

	// CopyRetention bounds the history at each copy of template.copyTo
	// apart from the backup's own storage: e.g. 7 backups in the primary
	// storage (retention) and 30 at the offsite copy. A copy not listed
	// follows retention. Where one location keeps a backup and another
	// does not, with deletionPolicy Delete only the artifact at the
	// latter is deleted (PruneAnnotation) and the EchoBackup stays until
	// no location keeps it; with Retain the EchoBackup goes once no
	// location keeps it, and its artifacts stay.
	// +kubebuilder:validation:MaxItems=3
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Copy Retention"
	CopyRetention []CopyRetentionPolicy `json:"copyRetention,omitempty"`
}

// CopyRetentionPolicy is the retention at one copy of a schedule's backups.
//
// +kubebuilder:validation:XValidation:rule="has(self.keepLast) || has(self.maxAge)",message="copyRetention[] needs keepLast, maxAge or both"
type CopyRetentionPolicy struct {
	// Name of the copy in template.copyTo.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +required
	Name string `json:"name"`

	RetentionPolicy `json:",inline"`
}

// RetentionPolicy bounds a schedule's backup history. Successful backups
// are kept by KeepLast and MaxAge; the newest successful backup is never pruned.
type RetentionPolicy struct {
	// KeepLast keeps this many of the newest successful backups.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`

	// MaxAge prunes backups older than this: a positive Go duration such as
	// "168h" (7 days) or "36h30m". Its units are h, m and s (also ms, us
	// and ns); there is no d or w.
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$') && duration(self) > duration('0s')",message="maxAge must be a positive Go duration such as 168h (7 days) or 36h30m; units are h, m and s, there is no d or w"
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// EchoBackupScheduleStatus is the observed state of an EchoBackupSchedule.
type EchoBackupScheduleStatus struct {
	// ObservedGeneration is the generation last reconciled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The API server's date-time format lets through times that metav1.Time
	// cannot parse, such as a lower-case "t". The rules on the times of
	// this status read them in CEL, which parses them as the operator does
	// and so refuses those.

	// Conditions: Ready.
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.lastTransitionTime >= timestamp('0001-01-01T00:00:00Z'))",message="conditions[].lastTransitionTime must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastScheduleTime is when the last backup was started.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Schedule Time"
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// NextScheduleTime is when the next backup will start.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Next Schedule Time"
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// LastSuccessfulBackup names the newest completed EchoBackup.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful Backup"
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`

	// LastSuccessfulTime is when that backup completed.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful Time"
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// LastRestoreTestScheduleTime is the run time of spec.restoreTest.schedule
	// the last restore test was started (or skipped) for; before the first,
	// when the schedule began testing restores: the first test runs at the
	// first run time after it, also on a schedule that had backups before.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Restore Test Schedule Time"
	LastRestoreTestScheduleTime *metav1.Time `json:"lastRestoreTestScheduleTime,omitempty"`

	// NextRestoreTestTime is when the next restore test is due.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Next Restore Test Time"
	NextRestoreTestTime *metav1.Time `json:"nextRestoreTestTime,omitempty"`

	// LastRestoreTest is the result of the restore test that ended last.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Restore Test"
	LastRestoreTest *RestoreTestResult `json:"lastRestoreTest,omitempty"`

	// LastSuccessfulRestoreTestTime is when a restore test last succeeded.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful Restore Test Time"
	LastSuccessfulRestoreTestTime *metav1.Time `json:"lastSuccessfulRestoreTestTime,omitempty"`
}

// EchoBackupSchedule backs up an Echo on a cron schedule and prunes old backups.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ecbs,categories={echo-operator}
// +kubebuilder:printcolumn:name="Echo",type=string,JSONPath=`.spec.template.echoName`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Last",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.nextScheduleTime`,description="When the next backup is due (a date column would print a time to come as <invalid>)"
// +kubebuilder:printcolumn:name="Restore Test",type=string,JSONPath=`.status.lastRestoreTest.outcome`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="an EchoBackupSchedule name is at most 63 characters: it labels the EchoBackups the schedule starts"
// +operator-sdk:csv:customresourcedefinitions:displayName="Echo Backup Schedule",resources={{EchoBackup,v1alpha1,echobackups},{EchoRestore,v1alpha1,echorestores},{Echo,v1alpha1,echoes},{Event,v1}}
type EchoBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EchoBackupScheduleSpec `json:"spec"`
	// +optional
	Status EchoBackupScheduleStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EchoBackupScheduleList is a list of EchoBackupSchedule.
type EchoBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EchoBackupSchedule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EchoBackupSchedule{}, &EchoBackupScheduleList{})
}
