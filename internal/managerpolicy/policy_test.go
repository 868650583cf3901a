package managerpolicy

import (
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
	for _, tc := range []struct {
		name string
		dep  *appsv1.Deployment
		// open maps each open port to whether it is open to namespaces
		// labelled metrics: enabled only (else to any source).
		open map[int32]bool
	}{
		{name: "both ports", dep: deployment(metrics, live, other), open: map[int32]bool{9443: false, 8443: true}},
		{name: "no live API port", dep: deployment(metrics), open: map[int32]bool{8443: true}},
		{name: "no named port: nothing is open", dep: deployment(other), open: map[int32]bool{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			np := Build(tc.dep)
			g.Expect(np.Name).To(Equal(Name))
			g.Expect(np.Namespace).To(Equal("op"))
			g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"control-plane": "controller-manager"}),
				"it selects the Deployment's pods")
			g.Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
			g.Expect(np.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "Deployment"), HaveField("UID", tc.dep.UID),
				HaveField("Controller", HaveValue(BeTrue())), HaveField("BlockOwnerDeletion", HaveValue(BeFalse())))))
			open := map[int32]bool{}
			for _, rule := range np.Spec.Ingress {
				g.Expect(rule.Ports).To(HaveLen(1))
				g.Expect(*rule.Ports[0].Protocol).To(Equal(corev1.ProtocolTCP))
				g.Expect(rule.Ports[0].Port.Type).To(Equal(intstr.Int))
				restricted := len(rule.From) > 0
				if restricted {
					g.Expect(rule.From).To(ConsistOf(HaveField("NamespaceSelector.MatchLabels", Equal(map[string]string{"metrics": "enabled"}))))
				}
				open[rule.Ports[0].Port.IntVal] = restricted
			}
			g.Expect(open).To(Equal(tc.open))
		})
	}
}
