package managerpolicy

import (
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func deployment(ports ...corev1.ContainerPort) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "op", Name: "echo-operator-controller-manager", UID: "uid-1"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"control-plane": "controller-manager"}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Ports: ports}}}},
		},
	}
}

func TestBuild(t *testing.T) {
	live := corev1.ContainerPort{Name: LiveAPIPortName, ContainerPort: 9443}
	metrics := corev1.ContainerPort{Name: MetricsPortName, ContainerPort: 8443}
	other := corev1.ContainerPort{Name: "pprof", ContainerPort: 6060}
	controlPlane := []netip.Prefix{netip.MustParsePrefix("192.168.10.0/28"), netip.MustParsePrefix("2001:db8::10/128")}
	for _, tc := range []struct {
		name    string
		dep     *appsv1.Deployment
		sources []netip.Prefix
		// open maps each open port to the sources it is open to (empty:
		// any source).
		open map[int32][]networkingv1.NetworkPolicyPeer
	}{
		{name: "both ports, the live API's from the control plane's addresses", dep: deployment(metrics, live, other), sources: controlPlane,
			open: map[int32][]networkingv1.NetworkPolicyPeer{
				9443: {{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.10.0/28"}}, {IPBlock: &networkingv1.IPBlock{CIDR: "2001:db8::10/128"}}},
				8443: {{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"metrics": "enabled"}}}},
			}},
		{name: "no control plane addresses: the live API's port is open to any source", dep: deployment(metrics, live),
			open: map[int32][]networkingv1.NetworkPolicyPeer{
				9443: nil,
				8443: {{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"metrics": "enabled"}}}},
			}},
		{name: "no live API port", dep: deployment(metrics), sources: controlPlane,
			open: map[int32][]networkingv1.NetworkPolicyPeer{8443: {{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"metrics": "enabled"}}}}}},
		{name: "no named port: nothing is open", dep: deployment(other), sources: controlPlane, open: map[int32][]networkingv1.NetworkPolicyPeer{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			np := Build(tc.dep, tc.sources)
			g.Expect(np.Name).To(Equal(Name))
			g.Expect(np.Namespace).To(Equal("op"))
			g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"control-plane": "controller-manager"}),
				"it selects the Deployment's pods")
			g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
			g.Expect(np.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "Deployment"), HaveField("UID", tc.dep.UID),
				HaveField("Controller", HaveValue(BeTrue())), HaveField("BlockOwnerDeletion", HaveValue(BeFalse())))))
			open := map[int32][]networkingv1.NetworkPolicyPeer{}
			for _, rule := range np.Spec.Ingress {
				g.Expect(rule.Ports).To(HaveLen(1))
				g.Expect(*rule.Ports[0].Protocol).To(Equal(corev1.ProtocolTCP))
				g.Expect(rule.Ports[0].Port.Type).To(Equal(intstr.Int))
				open[rule.Ports[0].Port.IntVal] = rule.From
			}
			g.Expect(open).To(Equal(tc.open))
		})
	}
}
