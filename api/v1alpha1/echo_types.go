package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of an Echo.
//
// Ready, Deployed and ReleaseRecordsVerified are owned by the Echo status
// controller. ReleaseFailed, Irreconcilable and Paused are written by the
// Helm release reconciler, only while they are not False: an absent one is
// False.
const (
	// EchoConditionReady is True when the release for the current spec is
	// deployed and every desired replica is updated and available.
	EchoConditionReady = "Ready"

	// EchoConditionDeployed is True when the release has a deployed revision.
	EchoConditionDeployed = "Deployed"
	// EchoConditionReleaseFailed is True when the last install or upgrade failed.
	EchoConditionReleaseFailed = "ReleaseFailed"
	// EchoConditionIrreconcilable is True when the release cannot be reconciled.
	EchoConditionIrreconcilable = "Irreconcilable"
	// EchoConditionPaused is True while reconciliation is paused by annotation.
	EchoConditionPaused = "Paused"
	// EchoConditionReleaseRecordsVerified is True when every Secret that
	// carries Helm's release labels for this Echo was written by
	// echo-operator and not changed since. When False, its message names
	// the others: they are ignored, and never acted on.
	EchoConditionReleaseRecordsVerified = "ReleaseRecordsVerified"
)

// Reasons of the Deployed condition.
const (
	// EchoReasonInstallSuccessful: revision 1 of the release is deployed.
	EchoReasonInstallSuccessful = "InstallSuccessful"
	// EchoReasonUpgradeSuccessful: a later revision of the release is deployed.
	EchoReasonUpgradeSuccessful = "UpgradeSuccessful"
	// EchoReasonReleaseNotFound: the release has no deployed revision.
	EchoReasonReleaseNotFound = "ReleaseNotFound"
)

// Reasons of the ReleaseRecordsVerified condition.
const (
	// EchoReasonRecordsVerified: every release record verifies.
	EchoReasonRecordsVerified = "Verified"
	// EchoReasonUntrustedRecords: some release records were not written by
	// echo-operator, or were changed since; they are ignored.
	EchoReasonUntrustedRecords = "UntrustedRecords"
)

// Reasons of the Ready condition.
const (
	// EchoReasonAvailable: every desired replica is updated and available.
	EchoReasonAvailable = "Available"
	// EchoReasonScaledToZero: zero replicas are desired, so there is nothing to wait for.
	EchoReasonScaledToZero = "ScaledToZero"
	// EchoReasonRollingOut: the Deployment is converging on the current spec.
	EchoReasonRollingOut = "RollingOut"
	// EchoReasonReleasePending: the release for the current spec is not deployed yet.
	EchoReasonReleasePending = "ReleasePending"
	// EchoReasonReleaseFailed: Helm could not install or upgrade the release.
	EchoReasonReleaseFailed = "ReleaseFailed"
	// EchoReasonDeploymentFailed: the Deployment reports it cannot make progress.
	EchoReasonDeploymentFailed = "DeploymentFailed"
	// EchoReasonPaused: reconciliation of the release is paused.
	EchoReasonPaused = "Paused"
	// EchoReasonRestoring: an EchoRestore is writing the data; the echo
	// server is scaled to zero until it is in place.
	EchoReasonRestoring = "Restoring"
)

// Event reasons emitted for an Echo.
const (
	EventReasonReady                = "Ready"
	EventReasonNotReady             = "NotReady"
	EventReasonReleaseUninstalled   = "ReleaseUninstalled"
	EventReasonReleaseInstallFailed = "ReleaseInstallFailed"
	EventReasonReleaseUpgradeFailed = "ReleaseUpgradeFailed"
	EventReasonReleaseRecovered     = "ReleaseRecovered"
	// EventReasonUntrustedReleaseRecords: release records of the Echo that
	// echo-operator did not write appeared; they are ignored.
	EventReasonUntrustedReleaseRecords = "UntrustedReleaseRecords"
	EventReasonFinalBackupStarted      = "FinalBackupStarted"
	EventReasonFinalBackupCompleted    = "FinalBackupCompleted"
	EventReasonFinalBackupFailed       = "FinalBackupFailed"
)

// FinalBackupFinalizer is the finalizer earlier versions of the operator
// held an Echo with until its final backup had completed. The operator no
// longer adds it and removes it where it finds it: the uninstall gate reads
// the Echo's spec and its final backup instead (see internal/finalbackup).
const FinalBackupFinalizer = "echo.dev/final-backup"

// RestoreAnnotation names the EchoRestore writing an Echo's data. While it
// is set the release is quiesced: the echo server runs no pod, so nothing
// serves or writes until the data is in place. The EchoRestore controller
// sets it and removes it.
const RestoreAnnotation = "echo.dev/restore-in-progress"

// SpecGenerationAnnotation is set on the Echo's Deployment to the generation
// of the Echo spec that the deployed release was rendered from.
const SpecGenerationAnnotation = "echo.dev/spec-generation"

// PauseAnnotation pauses the Helm reconciliation of an Echo while "true"
// (never while the Echo is being deleted).
const PauseAnnotation = "echo.dev/pause-reconcile"

// EchoSpec is the desired state of an echo HTTP service.
//
// +kubebuilder:validation:XValidation:rule="!has(self.highAvailability) || !self.highAvailability.enabled || (has(self.autoscaling) && self.autoscaling.enabled ? self.autoscaling.minReplicas >= 3 : self.replicas >= 3)",message="highAvailability needs at least 3 replicas: set spec.replicas (or spec.autoscaling.minReplicas when autoscaling is enabled) to 3 or more"
// +kubebuilder:validation:XValidation:rule="!has(self.persistence) || !self.persistence.enabled || 'ReadWriteMany' in self.persistence.accessModes || (self.replicas <= 1 && !(has(self.autoscaling) && self.autoscaling.enabled) && !(has(self.highAvailability) && self.highAvailability.enabled))",message="a ReadWriteOnce volume can serve a single replica: set spec.persistence.accessModes to [ReadWriteMany] to run more than one"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || !self.autoscaling.enabled || !has(self.resources) || (has(self.resources.requests) && 'cpu' in self.resources.requests)",message="autoscaling targets CPU utilization: spec.resources.requests.cpu is required when autoscaling is enabled"
type EchoSpec struct {
	// Replicas is the number of echo server pods. Ignored while autoscaling
	// is enabled.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas *int32 `json:"replicas,omitempty"`

	// Image is the echo server image reference (tag or digest). Defaults to
	// the image the operator was installed with (RELATED_IMAGE_ECHO).
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^([a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*(:[0-9]+)?/)?[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)*(:[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$`
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image"
	Image string `json:"image,omitempty"`

	// ImagePullPolicy is the pull policy of the echo server container.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +kubebuilder:default=IfNotPresent
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image Pull Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:imagePullPolicy"}
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets name Secrets in the Echo's namespace used to pull the image.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(s, size(s.?name.orValue('')) <= 253)",message="imagePullSecrets[].name is a Secret name: at most 253 characters"
	// +listType=atomic
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Image Pull Secrets"
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Message is added to every echoed response.
	// +kubebuilder:default="Hello from Echo"
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Message"
	Message string `json:"message,omitempty"`

	// Port is the port the echo server listens on inside the pod. Ports
	// below 1024 need privileges the restricted pod security profile denies.
	// +kubebuilder:default=8080
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Port",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:number"}
	Port int32 `json:"port,omitempty"`

	// Resources of the echo server container. Defaults to requests of 10m
	// CPU and 32Mi memory and limits of 200m CPU and 64Mi memory.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:resourceRequirements"}
	Resources *ResourceRequirements `json:"resources,omitempty"`

	// Service exposes the echo server inside the cluster.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Service"
	Service ServiceSpec `json:"service,omitempty"`

	// Ingress exposes the Service outside the cluster through an Ingress.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ingress"
	Ingress *IngressSpec `json:"ingress,omitempty"`

	// HighAvailability runs at least 3 replicas spread across nodes and
	// zones, guarded by a PodDisruptionBudget, with zero-downtime rollouts.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="High Availability"
	HighAvailability *HighAvailabilitySpec `json:"highAvailability,omitempty"`

	// Autoscaling scales the echo server on CPU load with a HorizontalPodAutoscaler.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Autoscaling"
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// Persistence gives the echo server a PersistentVolumeClaim as its data
	// directory, where it keeps a durable journal of the requests it served.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Persistence"
	Persistence *PersistenceSpec `json:"persistence,omitempty"`

	// NodeSelector constrains the echo server pods to nodes with these labels.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317)",message="nodeSelector keys are label keys: at most 317 characters (a 253-character prefix, '/' and a 63-character name)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 317 || (k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253)))",message="nodeSelector keys are label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Node"}
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// Tolerations of the echo server pods, as a pod takes them: keys and
	// values are a taint's, operator Exists or Equal, tolerationSeconds
	// only with the effect NoExecute; all keys and values together at most
	// 4096 characters.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.map(t, size(t.?key.orValue('')) + size(t.?value.orValue(''))).sum() <= 4096",message="tolerations hold at most 4096 characters of keys and values in all: tolerate with operator Exists rather than listing values"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.?operator.orValue('') in ['', 'Exists', 'Equal'])",message="tolerations[].operator must be Exists or Equal (Lt and Gt need an alpha feature of Kubernetes)"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.?effect.orValue('') in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="tolerations[].effect must be NoSchedule, PreferNoSchedule, NoExecute or empty (every effect)"
	// +listType=atomic
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Tolerations"
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// Affinity of the echo server pods. When set it replaces the
	// anti-affinity that highAvailability adds. The weight of a preferred
	// term is 1 to 100, as in a pod. Its lists and strings are bounded
	// (see Affinity).
	// +kubebuilder:validation:XValidation:rule="!has(self.nodeAffinity) || !has(self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(t, t.weight >= 1 && t.weight <= 100)",message="affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"
	// +kubebuilder:validation:XValidation:rule="!has(self.podAffinity) || !has(self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(t, t.weight >= 1 && t.weight <= 100)",message="affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"
	// +kubebuilder:validation:XValidation:rule="!has(self.podAntiAffinity) || !has(self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(t, t.weight >= 1 && t.weight <= 100)",message="affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Affinity",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:nodeAffinity","urn:alm:descriptor:com.tectonic.ui:podAffinity","urn:alm:descriptor:com.tectonic.ui:podAntiAffinity"}
	Affinity *Affinity `json:"affinity,omitempty"`

	// Backup configures the backups the operator takes of this Echo by itself.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup"
	Backup *EchoBackupPolicy `json:"backup,omitempty"`

	// PodAnnotations are added to the echo server pods: at most 64, with
	// keys of at most 317 characters and at most 8192 characters of keys
	// and values in all.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317)",message="podAnnotations keys are at most 317 characters (a 253-character prefix, '/' and a 63-character name)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 317 || (k.matches('^([A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?([.][A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253)))",message="podAnnotations keys are qualified names: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +kubebuilder:validation:XValidation:rule="self.map(k, size(k) + size(self[k])).sum() <= 8192",message="podAnnotations hold at most 8192 characters of keys and values in all: keep large configuration in a ConfigMap"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Annotations"
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
}

// ServiceType is the type of the Service in front of the echo server.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
type ServiceType string

// ServiceSpec describes the Service in front of the echo server.
type ServiceSpec struct {
	// Type of the Service. The Service balances requests over every ready
	// replica; use LoadBalancer to also get an external load balancer.
	// +kubebuilder:default=ClusterIP
	// +optional
	Type ServiceType `json:"type,omitempty"`

	// Port of the Service.
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`

	// Annotations are added to the Service, for example to configure a
	// cloud load balancer: at most 64, with keys of at most 317 characters
	// and at most 8192 characters of keys and values in all.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317)",message="service.annotations keys are at most 317 characters (a 253-character prefix, '/' and a 63-character name)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 317 || (k.matches('^([A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?([.][A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253)))",message="service.annotations keys are qualified names: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +kubebuilder:validation:XValidation:rule="self.map(k, size(k) + size(self[k])).sum() <= 8192",message="service.annotations hold at most 8192 characters of keys and values in all"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// IngressSpec describes the Ingress in front of the Service.
//
// +kubebuilder:validation:XValidation:rule="!self.enabled || (has(self.host) && size(self.host) > 0)",message="ingress.host is required when ingress is enabled"
type IngressSpec struct {
	// Enabled creates the Ingress.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// ClassName is the IngressClass to use; empty means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	// +optional
	ClassName string `json:"className,omitempty"`

	// Host is the fully qualified host name the Ingress serves, optionally
	// with a leading wildcard label (*.example.com).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^((\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	// +optional
	Host string `json:"host,omitempty"`

	// TLSSecretName names a Secret of type kubernetes.io/tls in the Echo's
	// namespace that terminates TLS for Host. Empty means plain HTTP.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$`
	// +optional
	TLSSecretName string `json:"tlsSecretName,omitempty"`
}

// HighAvailabilitySpec switches on highly available operation.
type HighAvailabilitySpec struct {
	// Enabled requires at least 3 replicas, adds a PodDisruptionBudget that
	// keeps all but one available, and spreads the pods across nodes and zones.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// AutoscalingSpec describes the HorizontalPodAutoscaler of the echo server.
//
// +kubebuilder:validation:XValidation:rule="self.maxReplicas >= self.minReplicas",message="autoscaling.maxReplicas must be greater than or equal to autoscaling.minReplicas"
type AutoscalingSpec struct {
	// Enabled creates the HorizontalPodAutoscaler; spec.replicas is then ignored.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// MinReplicas is the lower bound of the autoscaler.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MinReplicas int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the upper bound of the autoscaler.
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxReplicas int32 `json:"maxReplicas,omitempty"`

	// TargetCPUUtilizationPercentage is the average CPU utilization, in
	// percent of the CPU request, that the autoscaler aims for.
	// +kubebuilder:default=80
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetCPUUtilizationPercentage int32 `json:"targetCPUUtilizationPercentage,omitempty"`
}

// PersistenceSpec describes the PersistentVolumeClaim of the echo server.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.storageClassName) || (has(self.storageClassName) && self.storageClassName == oldSelf.storageClassName)",message="persistence.storageClassName cannot change once set: a claim's storage class is immutable"
// +kubebuilder:validation:XValidation:rule="self.accessModes == oldSelf.accessModes",message="persistence.accessModes cannot change: a claim's access modes are immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !string(self.size).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || quantity(string(self.size)).isGreaterThan(quantity('0'))",message="persistence.size must be greater than zero"
type PersistenceSpec struct {
	// Enabled creates the claim and mounts it as the data directory.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Size requested for the claim. It can grow (if the storage class
	// allows expansion) but not shrink. An exponent has at most 2 digits.
	// +kubebuilder:default="1Gi"
	// +optional
	Size *BoundedQuantity `json:"size,omitempty"`

	// StorageClassName of the claim; unset means the cluster default.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// AccessModes of the claim. More than one replica needs ReadWriteMany.
	// +kubebuilder:default={"ReadWriteOnce"}
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:items:Enum=ReadWriteOnce;ReadWriteMany;ReadWriteOncePod
	// +listType=set
	// +optional
	AccessModes []corev1.PersistentVolumeAccessMode `json:"accessModes,omitempty"`
}

// EchoBackupPolicy configures the backups the operator takes of an Echo.
type EchoBackupPolicy struct {
	// BeforeDelete takes a final backup when the Echo is deleted: nothing
	// the Echo made is removed until that backup has completed.
	// +optional
	BeforeDelete *FinalBackupSpec `json:"beforeDelete,omitempty"`
}

// FinalBackupSpec describes the backup taken before an Echo is deleted.
//
// +kubebuilder:validation:XValidation:rule="!self.enabled || has(self.storage)",message="backup.beforeDelete.storage is required when the final backup is enabled"
type FinalBackupSpec struct {
	// Enabled takes the final backup. Setting it to false while the Echo is
	// being deleted gives up on the backup and lets the deletion proceed.
	// +kubebuilder:default=false
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// Storage is where the final backup is written.
	// +optional
	Storage *BackupStorage `json:"storage,omitempty"`

	// Compression of the archive.
	// +kubebuilder:default=Gzip
	// +optional
	Compression Compression `json:"compression,omitempty"`
}

// EchoStatus is the observed state of an Echo, rebuilt from its Deployment,
// Service and Helm release.
type EchoStatus struct {
	// ObservedGeneration is the generation of the Echo spec that the
	// deployed release, and so the workload counts here, were rendered from.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The API server's date-time format lets through times that metav1.Time
	// cannot parse, such as a lower-case "t". The rule on the conditions
	// reads their times in CEL, which parses them as the operator does and
	// so refuses those.

	// Conditions: Ready (workload), and Initialized, Deployed, ReleaseFailed,
	// Irreconcilable and Paused (Helm release).
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.lastTransitionTime >= timestamp('0001-01-01T00:00:00Z'))",message="conditions[].lastTransitionTime must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Replicas is the number of replicas desired by the Deployment.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Replicas",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of ready pods.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready Replicas"
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of pods ready for at least minReadySeconds.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Available Replicas"
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// UpdatedReplicas is the number of pods running the current pod template.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Updated Replicas"
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// Selector is the label selector of the echo server pods, for the scale subresource.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pod Selector"
	Selector string `json:"selector,omitempty"`

	// Address is the in-cluster URL of the Service.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Address",xDescriptors={"urn:alm:descriptor:org.w3:link"}
	Address string `json:"address,omitempty"`

	// ExternalAddress is the URL reachable from outside the cluster: the
	// Ingress host, or the load balancer's address, once known.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="External Address",xDescriptors={"urn:alm:descriptor:org.w3:link"}
	ExternalAddress string `json:"externalAddress,omitempty"`

	// DeployedRelease names the Helm release that renders this Echo. The
	// rendered manifest is deliberately not kept in status.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Deployed Release"
	DeployedRelease *DeployedRelease `json:"deployedRelease,omitempty"`

	// LastSuccessfulBackup is the EchoBackup of this Echo that completed
	// last, while it exists.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful Backup"
	LastSuccessfulBackup *BackupReference `json:"lastSuccessfulBackup,omitempty"`

	// NextScheduledBackup is the next run of the EchoBackupSchedules that
	// back up this Echo, while one is scheduled and not suspended.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Next Scheduled Backup"
	NextScheduledBackup *ScheduledBackup `json:"nextScheduledBackup,omitempty"`

	// LastRestoreTest is the restore test of this Echo's backups that
	// ended last, among its EchoBackupSchedules' (spec.restoreTest).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Restore Test"
	LastRestoreTest *RestoreTestResult `json:"lastRestoreTest,omitempty"`
}

// BackupReference names a completed EchoBackup of the Echo's namespace.
type BackupReference struct {
	// Name of the EchoBackup.
	// +required
	Name string `json:"name"`
	// CompletionTime is when it completed.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +required
	CompletionTime metav1.Time `json:"completionTime"`
}

// ScheduledBackup is a backup to come: when, and which schedule starts it.
type ScheduledBackup struct {
	// Schedule names the EchoBackupSchedule.
	// +required
	Schedule string `json:"schedule"`
	// Time is when the backup is due.
	// +kubebuilder:validation:XValidation:rule="self >= timestamp('0001-01-01T00:00:00Z')",message="must be an RFC 3339 time such as 2024-01-01T00:00:00Z"
	// +required
	Time metav1.Time `json:"time"`
}

// DeployedRelease identifies a Helm release.
type DeployedRelease struct {
	// Name of the release; always the Echo's name.
	// +optional
	Name string `json:"name,omitempty"`
}

// Echo is an echo HTTP service: a Deployment of the echo server behind a
// Service, optionally with an Ingress, high availability, autoscaling and
// persistent storage. It is rendered through the echo Helm chart.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:path=echoes,shortName=ec,categories={echo-operator,all}
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Address",type=string,JSONPath=`.status.address`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`,priority=1
// +kubebuilder:printcolumn:name="Last Backup",type=date,JSONPath=`.status.lastSuccessfulBackup.completionTime`,priority=1
// +kubebuilder:printcolumn:name="Next Backup",type=string,JSONPath=`.status.nextScheduledBackup.time`,priority=1,description="When the next scheduled backup is due (a date column would print a time to come as <invalid>)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 53",message="an Echo name is at most 53 characters: it names a Helm release"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="an Echo name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter): it names a Service"
// +operator-sdk:csv:customresourcedefinitions:displayName="Echo",resources={{Deployment,v1},{Service,v1},{Ingress,v1},{HorizontalPodAutoscaler,v2},{PodDisruptionBudget,v1},{PersistentVolumeClaim,v1},{Secret,v1},{Event,v1}}
type Echo struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:default={}
	// +optional
	Spec EchoSpec `json:"spec"`
	// +optional
	Status EchoStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// EchoList is a list of Echo.
type EchoList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Echo `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Echo{}, &EchoList{})
}
