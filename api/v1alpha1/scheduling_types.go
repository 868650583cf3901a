package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// A pod's node selector, tolerations and label selectors take label values
// and taint keys of a fixed syntax, which kube-apiserver checks when it
// admits the Deployment the chart renders. The types below carry that
// syntax into the Echo's schema, with a maxLength on every string, so that
// an Echo whose pods the API server would refuse is refused at admission
// instead, and the CEL rules that check the syntax stay within the API
// server's cost budget.

// LabelValue is a label value: empty, or at most 63 letters, digits, '-',
// '_' and '.', starting and ending with a letter or digit.
//
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:XValidation:rule="self.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$')",message="must be a label value: empty, or letters, digits, '-', '_' and '.', starting and ending with a letter or digit"
type LabelValue string

// Toleration is a pod's toleration (corev1.Toleration), field for field
// and in the same JSON, with a pod's rules on its fields.
//
// +kubebuilder:validation:XValidation:rule="(has(self.key) && size(self.key) > 0) || (has(self.operator) && self.operator == 'Exists')",message="operator must be Exists when the key is empty (a toleration of every taint)"
// +kubebuilder:validation:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="value must be empty when the operator is Exists"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",message="tolerationSeconds needs the effect NoExecute: only a NoExecute taint evicts a pod after a while"
type Toleration struct {
	// Key is the taint key the toleration applies to; empty means every key.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253))",message="key is a taint key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +optional
	Key string `json:"key,omitempty"`
	// Operator is Exists or Equal (the default). Lt and Gt need an alpha
	// feature of Kubernetes, off by default, and are not offered.
	// +optional
	Operator corev1.TolerationOperator `json:"operator,omitempty"`
	// Value is the taint value the toleration matches, with Equal.
	// +optional
	Value LabelValue `json:"value,omitempty"`
	// Effect is the taint effect to match: NoSchedule, PreferNoSchedule,
	// NoExecute, or empty for every effect.
	// +optional
	Effect corev1.TaintEffect `json:"effect,omitempty"`
	// TolerationSeconds is how long the pod stays bound to a node after a
	// NoExecute taint appears; with the effect NoExecute only.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// CoreTolerations returns the tolerations as a pod takes them.
func CoreTolerations(in []Toleration) []corev1.Toleration {
	if in == nil {
		return nil
	}
	out := make([]corev1.Toleration, 0, len(in))
	for _, t := range in {
		out = append(out, corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: string(t.Value),
			Effect: t.Effect, TolerationSeconds: copyInt64(t.TolerationSeconds)})
	}
	return out
}

// CoreNodeSelector returns the node selector as a pod takes it.
func CoreNodeSelector(in map[string]LabelValue) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = string(v)
	}
	return out
}

func copyInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
