package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// MoverSettings place the data mover's pods and size them: the pods of the
// Jobs a backup (backup, artifact deletion) or a restore (inspect,
// restore) runs. An EchoBackup, an EchoRestore and an EchoBackupLocation
// carry them; each field is taken from the backup or restore, else from
// the EchoBackupLocation its storage names, else left at the operator's
// default. They reach only the pods of the object's own namespace, as a
// pod's own fields, and nothing else of the pod: its security context,
// volumes, image and command stay the operator's, under the restricted Pod
// Security Standard. Every list and string is bounded, as the Echo's
// scheduling fields are, so that the CEL rules stay within the API
// server's cost budget and what a tenant can store stays small.
type MoverSettings struct {
	// Resources of the data mover's container: requests and limits of cpu
	// and memory, as a container takes them. When set they replace the
	// defaults (requests of 100m CPU and 64Mi memory, limits of 2 CPU and
	// 256Mi memory for a backup or restore; 10m, 32Mi, 500m and 128Mi for
	// an inspection or an artifact deletion) as a whole, for every data
	// mover pod of the object: what is left out is unset, as in a pod (a
	// LimitRange of the namespace may fill it in).
	// +optional
	Resources *MoverResources `json:"resources,omitempty"`

	// NodeSelector constrains the data mover's pods to nodes with these
	// labels. When set it replaces the default: the Echo's nodeSelector
	// for a backup or restore, none for an inspection or an artifact
	// deletion. An empty map is the same as none.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317)",message="nodeSelector keys are label keys: at most 317 characters (a 253-character prefix, '/' and a 63-character name)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 317 || (k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253)))",message="nodeSelector keys are label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// Tolerations of the data mover's pods, as a pod takes them. When set
	// they replace the default: the Echo's tolerations for a backup or
	// restore, none for an inspection or an artifact deletion. An empty
	// list is the same as none.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.map(t, size(t.?key.orValue('')) + size(t.?value.orValue(''))).sum() <= 4096",message="tolerations hold at most 4096 characters of keys and values in all: tolerate with operator Exists rather than listing values"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.?operator.orValue('') in ['', 'Exists', 'Equal'])",message="tolerations[].operator must be Exists or Equal (Lt and Gt need an alpha feature of Kubernetes)"
	// +kubebuilder:validation:XValidation:rule="self.all(t, t.?effect.orValue('') in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="tolerations[].effect must be NoSchedule, PreferNoSchedule, NoExecute or empty (every effect)"
	// +listType=atomic
	// +optional
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// Affinity of the data mover's pods, as a pod's affinity, with the
	// bounds of the Echo's. It is added to the affinity a backup needs
	// to reach the Echo's ReadWriteOnce claim (joining the Echo's pods on
	// their node), which it does not replace.
	// +kubebuilder:validation:XValidation:rule="!has(self.nodeAffinity) || !has(self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(t, t.weight >= 1 && t.weight <= 100)",message="affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"
	// +kubebuilder:validation:XValidation:rule="!has(self.podAffinity) || !has(self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(t, t.weight >= 1 && t.weight <= 100)",message="affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"
	// +kubebuilder:validation:XValidation:rule="!has(self.podAntiAffinity) || !has(self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution) || self.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution.all(t, t.weight >= 1 && t.weight <= 100)",message="affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"
	// +optional
	Affinity *Affinity `json:"affinity,omitempty"`

	// PriorityClassName is the PriorityClass of the data mover's pods; by
	// default none (the cluster's default priority). The classes Kubernetes
	// reserves for its own critical components (system-*) are refused.
	// A class that does not exist keeps the Job from creating its pods.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="priorityClassName must be a PriorityClass name: a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', starting and ending with a letter or digit), e.g. backup-low"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('system-')",message="priorityClassName must not name a system- class: those are kept for the cluster's critical components"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// MoverResources are the requests and limits of the data mover's
// container: cpu and memory only, each a quantity in the bounded form (see
// BoundedQuantity), a request at most its limit, a limit above zero. Each
// rule parses a quantity only once it has the bounded form.
//
// +kubebuilder:validation:MinProperties=1
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || self.requests.all(k, !(k in self.limits) || !string(self.requests[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || !string(self.limits[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="resources.requests must not exceed resources.limits of the same resource: raise the limit or lower the request"
type MoverResources struct {
	// Limits are the most the data mover may use: cpu and memory.
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(k, k == 'cpu' || k == 'memory')",message="resources.limits names cpu and memory only"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || quantity(string(self[k])).isGreaterThan(quantity('0')))",message="resources.limits must be more than zero"
	// +optional
	Limits map[corev1.ResourceName]BoundedQuantity `json:"limits,omitempty"`
	// Requests are what the scheduler reserves for the data mover: cpu and
	// memory.
	// +kubebuilder:validation:MaxProperties=2
	// +kubebuilder:validation:XValidation:rule="self.all(k, k == 'cpu' || k == 'memory')",message="resources.requests names cpu and memory only"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="resources.requests must not be negative"
	// +optional
	Requests map[corev1.ResourceName]BoundedQuantity `json:"requests,omitempty"`
}

// Core returns the requirements as the Kubernetes type a pod takes.
func (r *MoverResources) Core() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: coreList(r.Limits), Requests: coreList(r.Requests)}
}
