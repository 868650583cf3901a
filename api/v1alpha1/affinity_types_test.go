package v1alpha1_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// CoreAffinity keeps every field: the pod's affinity has the JSON of the
// Echo's type, which mirrors it field for field.
func TestCoreAffinityKeepsEveryField(t *testing.T) {
	RegisterTestingT(t)
	term := echov1alpha1.NodeSelectorTerm{
		MatchExpressions: []echov1alpha1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}},
		MatchFields:      []echov1alpha1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"node-1"}}},
	}
	selector := &echov1alpha1.LabelSelector{MatchLabels: map[string]echov1alpha1.LabelValue{"app": "db"},
		MatchExpressions: []echov1alpha1.LabelSelectorRequirement{{Key: "tier", Operator: "NotIn", Values: []string{"cache"}}}}
	podTerm := echov1alpha1.PodAffinityTerm{LabelSelector: selector, Namespaces: []string{"data"}, TopologyKey: corev1.LabelHostname,
		NamespaceSelector: &echov1alpha1.LabelSelector{MatchLabels: map[string]echov1alpha1.LabelValue{"team": "a"}},
		MatchLabelKeys:    []string{"pod-template-hash"}, MismatchLabelKeys: []string{"tenant"}}
	pods := &echov1alpha1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution:  []echov1alpha1.PodAffinityTerm{podTerm},
		PreferredDuringSchedulingIgnoredDuringExecution: []echov1alpha1.WeightedPodAffinityTerm{{Weight: 5, PodAffinityTerm: podTerm}},
	}
	in := &echov1alpha1.Affinity{
		NodeAffinity: &echov1alpha1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  &echov1alpha1.NodeSelector{NodeSelectorTerms: []echov1alpha1.NodeSelectorTerm{term}},
			PreferredDuringSchedulingIgnoredDuringExecution: []echov1alpha1.PreferredSchedulingTerm{{Weight: 7, Preference: term}},
		},
		PodAffinity:     pods,
		PodAntiAffinity: pods,
	}
	Expect(jsonOf(echov1alpha1.CoreAffinity(in))).To(Equal(jsonOf(in)))
	Expect(echov1alpha1.CoreAffinity(nil)).To(BeNil())
	Expect(jsonOf(echov1alpha1.CoreAffinity(&echov1alpha1.Affinity{}))).To(Equal(map[string]any{}))
}

func jsonOf(v any) map[string]any {
	data, err := json.Marshal(v)
	Expect(err).NotTo(HaveOccurred())
	var out map[string]any
	Expect(json.Unmarshal(data, &out)).To(Succeed())
	return out
}
