package v1alpha1

import (
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
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="an EchoBackupSchedule name is at most 63 characters: it labels the EchoBackups the schedule starts"
// +operator-sdk:csv:customresourcedefinitions:displayName="Echo Backup Schedule",resources={{EchoBackup,v1alpha1,echobackups},{Event,v1}}
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
