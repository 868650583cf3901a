package v1alpha1

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Kubernetes' quantity parser takes time that grows with the exponent:
// "1E999999999999" holds a decoder for hours, and an Echo holding one would
// stop every informer that lists Echoes, the operator's included. So the
// schema admits only the forms with an exponent of at most two digits, and
// the decoder refuses anything else before it parses, which also keeps an
// object admitted under an older schema from hanging the operator.

// BoundedQuantity is a resource quantity, such as 250m, 128Mi or 2, with an
// exponent of at most 2 digits.
//
// +kubebuilder:validation:Type=""
// +kubebuilder:validation:XIntOrString
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="string(self).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$')",message="must be a quantity such as 250m, 128Mi, 1Gi or 1e9; an exponent has at most 2 digits"
type BoundedQuantity struct {
	resource.Quantity `json:"-"`
}

// quantityForm is the rule above: resource.ParseQuantity's grammar with
// an exponent of at most two digits.
var quantityForm = regexp.MustCompile(`^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$`)

// maxQuantityLength is the MaxLength above.
const maxQuantityLength = 64

// NewBoundedQuantity parses a quantity in the bounded form.
func NewBoundedQuantity(s string) (BoundedQuantity, error) {
	if err := checkQuantityForm(s); err != nil {
		return BoundedQuantity{}, err
	}
	q, err := resource.ParseQuantity(s)
	return BoundedQuantity{Quantity: q}, err
}

// MustBoundedQuantity is NewBoundedQuantity for constants.
func MustBoundedQuantity(s string) BoundedQuantity {
	q, err := NewBoundedQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

func checkQuantityForm(s string) error {
	if len(s) > maxQuantityLength || !quantityForm.MatchString(s) {
		return fmt.Errorf("quantity %.64q must be a number with an optional suffix such as 250m, 128Mi or 1e9 (an exponent has at most 2 digits)", s)
	}
	return nil
}

// UnmarshalJSON implements json.Unmarshaler: a JSON string or number,
// checked for its form before it is parsed.
func (q *BoundedQuantity) UnmarshalJSON(data []byte) error {
	s := string(data)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if s == "null" {
		return nil
	}
	parsed, err := NewBoundedQuantity(s)
	if err != nil {
		return err
	}
	*q = parsed
	return nil
}

// ResourceRequirements of the echo server container: limits and requests,
// as in a pod, with quantities in the bounded form. The rules are a
// container's: a request is at most its limit, and an extended resource
// (a name with a '/') is counted in whole units and cannot be
// overcommitted, so its request equals its limit. Hugepages, whose rules
// depend on the page size, are not offered: the echo server does not use
// them. Each rule parses a quantity only once it has the bounded form (see
// BoundedQuantity): the parser would take hours over a long exponent.
//
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || self.requests.all(k, !(k in self.limits) || !string(self.requests[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || !string(self.limits[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",message="resources.requests must not exceed resources.limits of the same resource"
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || self.requests.all(k, !k.contains('/') || (has(self.limits) && k in self.limits && (!string(self.requests[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || !string(self.limits[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) == 0)))",message="an extended resource (a name with '/') cannot be overcommitted: set resources.limits to the same quantity as resources.requests, or set the limit alone"
// +kubebuilder:validation:XValidation:rule="[self.?limits.orValue({}), self.?requests.orValue({})].all(m, m.all(k, !k.contains('/') || !string(m[k]).matches('^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]{1,2})?$') || quantity(string(m[k])).isInteger() || string(m[k]).matches('^[+]?[0-9]+([.]0*)?$')))",message="an extended resource (a name with '/') is counted in whole units: its limits and requests must be integers"
type ResourceRequirements struct {
	// Limits are the most the container may use.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 308)",message="resource names are at most 308 characters (an extended resource's 244-character prefix, '/' and a 63-character name)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 308 || k in ['cpu', 'memory', 'ephemeral-storage'] || (k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 244 && !k.contains('kubernetes.io/') && !k.startsWith('requests.')))",message="resources.limits names cpu, memory, ephemeral-storage or an extended resource (a DNS subdomain prefix other than kubernetes.io's, '/' and a name, such as example.com/gpu); hugepages are not offered"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="resources.limits must not be negative"
	// +optional
	Limits map[corev1.ResourceName]BoundedQuantity `json:"limits,omitempty"`
	// Requests are what the scheduler reserves for the container.
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 308)",message="resource names are at most 308 characters (an extended resource's 244-character prefix, '/' and a 63-character name)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 308 || k in ['cpu', 'memory', 'ephemeral-storage'] || (k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 244 && !k.contains('kubernetes.io/') && !k.startsWith('requests.')))",message="resources.requests names cpu, memory, ephemeral-storage or an extended resource (a DNS subdomain prefix other than kubernetes.io's, '/' and a name, such as example.com/gpu); hugepages are not offered"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !string(self[k]).startsWith('-'))",message="resources.requests must not be negative"
	// +optional
	Requests map[corev1.ResourceName]BoundedQuantity `json:"requests,omitempty"`
}

// Core returns the requirements as the Kubernetes type a pod takes.
func (r *ResourceRequirements) Core() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: coreList(r.Limits), Requests: coreList(r.Requests)}
}

func coreList(in map[corev1.ResourceName]BoundedQuantity) corev1.ResourceList {
	if in == nil {
		return nil
	}
	out := make(corev1.ResourceList, len(in))
	for name, q := range in {
		out[name] = q.Quantity.DeepCopy()
	}
	return out
}
