package v1alpha1

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The affinity of an Echo is a pod's affinity (corev1.Affinity), field for
// field and in the same JSON, with a bound on every list and string: the
// operator caches every Echo whole, and the chart copies the affinity into
// a Deployment it caches too, so what one tenant can store must stay small.
// The bounds are far above what a pod's scheduling constraints need. The
// bounds of each list alone would multiply (terms of requirements of
// values), so the rule on Affinity caps its terms in all and the rules on
// each term cap its items and its characters; with every list bounded,
// CEL's cost estimate of those rules stays small. Each field also follows
// a pod's rules (label keys and values, operators and their values, node
// fields, namespace names), so that the Deployment the chart renders is
// never refused for them. docs/api.md tabulates the bounds and rules and
// the largest spec admitted. The data mover's settings (MoverSettings)
// take the same type, which CoreAffinity turns into a pod's.

// Affinity of the echo server pods, or of the data mover's, as a pod's affinity.
//
// +kubebuilder:validation:XValidation:rule="size(self.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])) + size(self.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])) + size(self.?podAffinity.?requiredDuringSchedulingIgnoredDuringExecution.orValue([])) + size(self.?podAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])) + size(self.?podAntiAffinity.?requiredDuringSchedulingIgnoredDuringExecution.orValue([])) + size(self.?podAntiAffinity.?preferredDuringSchedulingIgnoredDuringExecution.orValue([])) <= 8",message="affinity holds at most 8 terms in all (node selector terms, preferred terms and pod affinity terms, required or preferred): merge terms or drop some"
type Affinity struct {
	// NodeAffinity: the nodes the pods may, or prefer to, run on.
	// +optional
	NodeAffinity *NodeAffinity `json:"nodeAffinity,omitempty"`
	// PodAffinity: pods these pods run near.
	// +optional
	PodAffinity *PodAffinity `json:"podAffinity,omitempty"`
	// PodAntiAffinity: pods these pods run away from.
	// +optional
	PodAntiAffinity *PodAffinity `json:"podAntiAffinity,omitempty"`
}

// NodeAffinity is a pod's node affinity.
type NodeAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution: nodes must match one of its terms.
	// +optional
	RequiredDuringSchedulingIgnoredDuringExecution *NodeSelector `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// PreferredDuringSchedulingIgnoredDuringExecution: the scheduler prefers
	// nodes that match these terms, by the sum of their weights.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	PreferredDuringSchedulingIgnoredDuringExecution []PreferredSchedulingTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// NodeSelector is a list of node selector terms, ORed.
type NodeSelector struct {
	// NodeSelectorTerms: a node matches when it matches one of them.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +required
	NodeSelectorTerms []NodeSelectorTerm `json:"nodeSelectorTerms"`
}

// NodeSelectorTerm is a list of requirements, ANDed.
//
// +kubebuilder:validation:XValidation:rule="size(self.?matchExpressions.orValue([])) + size(self.?matchFields.orValue([])) <= 8",message="a node selector term holds at most 8 requirements (matchExpressions and matchFields together)"
// +kubebuilder:validation:XValidation:rule="(has(self.matchExpressions) ? self.matchExpressions.map(r, size(r.key) + (has(r.values) ? r.values.map(v, size(v)).sum() : 0)).sum() : 0) + (has(self.matchFields) ? self.matchFields.map(r, size(r.key) + (has(r.values) ? r.values.map(v, size(v)).sum() : 0)).sum() : 0) <= 1024",message="a node selector term's keys and values hold at most 1024 characters in all: match on a label the nodes share rather than listing values"
// +kubebuilder:validation:XValidation:rule="!has(self.matchFields) || self.matchFields.all(r, r.key == 'metadata.name' && r.operator in ['In', 'NotIn'] && size(r.?values.orValue([])) == 1)",message="a matchFields requirement is on metadata.name, with operator In or NotIn and exactly one value"
// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, !has(r.values) || r.values.all(v, size(v) <= 63))",message="matchExpressions[].values are label values: at most 63 characters"
// +kubebuilder:validation:XValidation:rule="!has(self.matchFields) || self.matchFields.all(r, !has(r.values) || size(r.values) != 1 || r.values[0].matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",message="matchFields[].values are node names: DNS subdomains (lower-case letters, digits, '-' and '.')"
type NodeSelectorTerm struct {
	// MatchExpressions: requirements on the node's labels.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	MatchExpressions []NodeSelectorRequirement `json:"matchExpressions,omitempty"`
	// MatchFields: requirements on the node's fields (metadata.name).
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	MatchFields []NodeSelectorRequirement `json:"matchFields,omitempty"`
}

// NodeSelectorRequirement is a key, an operator and values.
//
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || size(self.?values.orValue([])) > 0",message="values must be given when the operator is In or NotIn"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || size(self.?values.orValue([])) == 0",message="values must be empty when the operator is Exists or DoesNotExist"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt']) || (size(self.?values.orValue([])) == 1 && self.values[0].matches('^[0-9]{1,18}$'))",message="the operators Gt and Lt take exactly one value, a non-negative integer (a label value cannot start with '-')"
type NodeSelectorRequirement struct {
	// Key is a label key (or, in matchFields, metadata.name).
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)",message="key is a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +required
	Key string `json:"key"`
	// Operator is In, NotIn, Exists, DoesNotExist, Gt or Lt.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt
	// +required
	Operator corev1.NodeSelectorOperator `json:"operator"`
	// Values: label values (node names in matchFields); one integer with Gt and Lt.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// PreferredSchedulingTerm is a node selector term with a weight.
type PreferredSchedulingTerm struct {
	// Weight of the term, 1 to 100.
	// +required
	Weight int32 `json:"weight"`
	// Preference is the term.
	// +required
	Preference NodeSelectorTerm `json:"preference"`
}

// PodAffinity is a pod's pod affinity or anti-affinity.
type PodAffinity struct {
	// RequiredDuringSchedulingIgnoredDuringExecution: every term must hold.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	RequiredDuringSchedulingIgnoredDuringExecution []PodAffinityTerm `json:"requiredDuringSchedulingIgnoredDuringExecution,omitempty"`
	// PreferredDuringSchedulingIgnoredDuringExecution: the scheduler prefers
	// nodes where these terms hold, by the sum of their weights.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	PreferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// WeightedPodAffinityTerm is a pod affinity term with a weight.
type WeightedPodAffinityTerm struct {
	// Weight of the term, 1 to 100.
	// +required
	Weight int32 `json:"weight"`
	// PodAffinityTerm is the term.
	// +required
	PodAffinityTerm PodAffinityTerm `json:"podAffinityTerm"`
}

// PodAffinityTerm selects pods, and the topology domain they must (or must
// not) share with these pods.
//
// +kubebuilder:validation:XValidation:rule="size(self.?labelSelector.?matchLabels.orValue({})) + size(self.?labelSelector.?matchExpressions.orValue([])) + size(self.?namespaceSelector.?matchLabels.orValue({})) + size(self.?namespaceSelector.?matchExpressions.orValue([])) + size(self.?namespaces.orValue([])) + size(self.?matchLabelKeys.orValue([])) + size(self.?mismatchLabelKeys.orValue([])) <= 8",message="a pod affinity term holds at most 8 items (matchLabels entries and matchExpressions of its two selectors, namespaces, matchLabelKeys and mismatchLabelKeys together)"
// +kubebuilder:validation:XValidation:rule="size(self.topologyKey) + (has(self.namespaces) ? self.namespaces.map(k, size(k)).sum() : 0) + (has(self.matchLabelKeys) ? self.matchLabelKeys.map(k, size(k)).sum() : 0) + (has(self.mismatchLabelKeys) ? self.mismatchLabelKeys.map(k, size(k)).sum() : 0) + (has(self.labelSelector) && has(self.labelSelector.matchLabels) ? self.labelSelector.matchLabels.map(k, size(k) + size(self.labelSelector.matchLabels[k])).sum() : 0) + (has(self.labelSelector) ? (has(self.labelSelector.matchExpressions) ? self.labelSelector.matchExpressions.map(r, size(r.key) + (has(r.values) ? r.values.map(v, size(v)).sum() : 0)).sum() : 0) : 0) + (has(self.namespaceSelector) && has(self.namespaceSelector.matchLabels) ? self.namespaceSelector.matchLabels.map(k, size(k) + size(self.namespaceSelector.matchLabels[k])).sum() : 0) + (has(self.namespaceSelector) ? (has(self.namespaceSelector.matchExpressions) ? self.namespaceSelector.matchExpressions.map(r, size(r.key) + (has(r.values) ? r.values.map(v, size(v)).sum() : 0)).sum() : 0) : 0) <= 1024",message="a pod affinity term's keys and values (topologyKey, namespaces, label keys and both selectors) hold at most 1024 characters in all: select on a label the pods share rather than listing values"
// +kubebuilder:validation:XValidation:rule="has(self.labelSelector) || (size(self.?matchLabelKeys.orValue([])) == 0 && size(self.?mismatchLabelKeys.orValue([])) == 0)",message="matchLabelKeys and mismatchLabelKeys need a labelSelector"
// +kubebuilder:validation:XValidation:rule="!has(self.matchLabelKeys) || !has(self.mismatchLabelKeys) || !self.matchLabelKeys.exists(k, k in self.mismatchLabelKeys)",message="a key may not be in both matchLabelKeys and mismatchLabelKeys"
// +kubebuilder:validation:XValidation:rule="!has(self.matchLabelKeys) || !has(self.labelSelector) || !has(self.labelSelector.matchLabels) || !self.matchLabelKeys.exists(k, k in self.labelSelector.matchLabels)",message="a key of matchLabelKeys may not also be in labelSelector.matchLabels: the pod's value of it is added there"
// +kubebuilder:validation:XValidation:rule="!has(self.matchLabelKeys) || !has(self.labelSelector) || !has(self.labelSelector.matchExpressions) || self.labelSelector.matchExpressions.all(r, !(r.key in self.matchLabelKeys))",message="a key of matchLabelKeys may not also be in labelSelector.matchExpressions: the pod's value of it is added there"
type PodAffinityTerm struct {
	// LabelSelector selects the pods.
	// +optional
	LabelSelector *LabelSelector `json:"labelSelector,omitempty"`
	// Namespaces the pods are looked for in; none (and no namespaceSelector)
	// means the Echo's namespace.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.all(n, n.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="namespaces are namespace names: DNS labels (lower-case letters, digits and '-', starting and ending with a letter or digit)"
	// +listType=atomic
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// TopologyKey is the node label whose value is the topology domain.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)",message="topologyKey is a node label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +required
	TopologyKey string `json:"topologyKey"`
	// NamespaceSelector selects the namespaces the pods are looked for in.
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
	// MatchLabelKeys: label keys whose values, read from the pod itself,
	// are added to labelSelector with In.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="matchLabelKeys are label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +listType=atomic
	// +optional
	MatchLabelKeys []string `json:"matchLabelKeys,omitempty"`
	// MismatchLabelKeys: likewise, added with NotIn.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253))",message="mismatchLabelKeys are label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +listType=atomic
	// +optional
	MismatchLabelKeys []string `json:"mismatchLabelKeys,omitempty"`
}

// LabelSelector is a label selector, as in metav1: matchLabels and
// matchExpressions, ANDed.
type LabelSelector struct {
	// MatchLabels: labels the objects carry, with these values.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) <= 317)",message="matchLabels keys are label keys: at most 317 characters (a 253-character prefix, '/' and a 63-character name)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(k) > 317 || (k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!k.contains('/') || k.indexOf('/') <= 253)))",message="matchLabels keys are label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +optional
	MatchLabels map[string]LabelValue `json:"matchLabels,omitempty"`
	// MatchExpressions: requirements on the objects' labels.
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is a key, an operator and values.
//
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || size(self.?values.orValue([])) > 0",message="values must be given when the operator is In or NotIn"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || size(self.?values.orValue([])) == 0",message="values must be empty when the operator is Exists or DoesNotExist"
type LabelSelectorRequirement struct {
	// Key is a label key.
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && (!self.contains('/') || self.indexOf('/') <= 253)",message="key is a label key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 characters (letters, digits, '-', '_' and '.', starting and ending with a letter or digit)"
	// +required
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	// +required
	Operator string `json:"operator"`
	// Values: label values.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	Values []string `json:"values,omitempty"`
}

// CoreAffinity returns the affinity as a pod takes it; nil for none.
func CoreAffinity(in *Affinity) *corev1.Affinity {
	if in == nil {
		return nil
	}
	return &corev1.Affinity{
		NodeAffinity:    coreNodeAffinity(in.NodeAffinity),
		PodAffinity:     corePodAffinity(in.PodAffinity),
		PodAntiAffinity: (*corev1.PodAntiAffinity)(corePodAffinity(in.PodAntiAffinity)),
	}
}

func coreNodeAffinity(in *NodeAffinity) *corev1.NodeAffinity {
	if in == nil {
		return nil
	}
	out := &corev1.NodeAffinity{}
	if req := in.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		out.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: convertAll(req.NodeSelectorTerms, coreNodeSelectorTerm)}
	}
	out.PreferredDuringSchedulingIgnoredDuringExecution = convertAll(in.PreferredDuringSchedulingIgnoredDuringExecution,
		func(t PreferredSchedulingTerm) corev1.PreferredSchedulingTerm {
			return corev1.PreferredSchedulingTerm{Weight: t.Weight, Preference: coreNodeSelectorTerm(t.Preference)}
		})
	return out
}

func coreNodeSelectorTerm(in NodeSelectorTerm) corev1.NodeSelectorTerm {
	req := func(r NodeSelectorRequirement) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: slices.Clone(r.Values)}
	}
	return corev1.NodeSelectorTerm{MatchExpressions: convertAll(in.MatchExpressions, req), MatchFields: convertAll(in.MatchFields, req)}
}

// corePodAffinity converts a pod affinity or, as the same Go type, a pod
// anti-affinity.
func corePodAffinity(in *PodAffinity) *corev1.PodAffinity {
	if in == nil {
		return nil
	}
	return &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: convertAll(in.RequiredDuringSchedulingIgnoredDuringExecution, corePodAffinityTerm),
		PreferredDuringSchedulingIgnoredDuringExecution: convertAll(in.PreferredDuringSchedulingIgnoredDuringExecution,
			func(t WeightedPodAffinityTerm) corev1.WeightedPodAffinityTerm {
				return corev1.WeightedPodAffinityTerm{Weight: t.Weight, PodAffinityTerm: corePodAffinityTerm(t.PodAffinityTerm)}
			}),
	}
}

func corePodAffinityTerm(in PodAffinityTerm) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector:     coreLabelSelector(in.LabelSelector),
		Namespaces:        slices.Clone(in.Namespaces),
		TopologyKey:       in.TopologyKey,
		NamespaceSelector: coreLabelSelector(in.NamespaceSelector),
		MatchLabelKeys:    slices.Clone(in.MatchLabelKeys),
		MismatchLabelKeys: slices.Clone(in.MismatchLabelKeys),
	}
}

func coreLabelSelector(in *LabelSelector) *metav1.LabelSelector {
	if in == nil {
		return nil
	}
	return &metav1.LabelSelector{
		MatchLabels: CoreNodeSelector(in.MatchLabels),
		MatchExpressions: convertAll(in.MatchExpressions, func(r LabelSelectorRequirement) metav1.LabelSelectorRequirement {
			return metav1.LabelSelectorRequirement{Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: slices.Clone(r.Values)}
		}),
	}
}

// convertAll converts each item of a list; nil stays nil.
func convertAll[In, Out any](in []In, convert func(In) Out) []Out {
	if in == nil {
		return nil
	}
	out := make([]Out, 0, len(in))
	for _, v := range in {
		out = append(out, convert(v))
	}
	return out
}
