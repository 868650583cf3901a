//go:build linux

package olm

import (
	"context"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// managerNetworkPolicy is the NetworkPolicy the manager keeps for its
	// pods (internal/managerpolicy).
	managerNetworkPolicy = "echo-operator-controller-manager"
	// liveAPIPort is the port the manager serves the live API on, in both
	// installs.
	liveAPIPort = 9443
)

// expectManagerNetworkPolicy checks the NetworkPolicy the manager keeps for
// its pods in every install, owned by its Deployment dep: it selects the
// pods of dep; anyone may reach the live API's port (kube-apiserver cannot
// be selected), only namespaces labelled metrics: enabled the metrics
// port, and no other port is open.
func expectManagerNetworkPolicy(dep *appsv1.Deployment) {
	np := &networkingv1.NetworkPolicy{}
	Eventually(func() error {
		return k8sClient.Get(context.Background(), client.ObjectKey{Namespace: dep.Namespace, Name: managerNetworkPolicy}, np)
	}, timeout, interval).Should(Succeed(), "the manager applies its NetworkPolicy")
	Expect(np.GetOwnerReferences()).To(ContainElement(And(HaveField("Kind", "Deployment"), HaveField("UID", dep.UID))),
		"the NetworkPolicy belongs to the manager's Deployment, which an uninstall removes")
	selector, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	Expect(err).NotTo(HaveOccurred())
	Expect(selector.Empty()).To(BeFalse())
	Expect(selector.Matches(labels.Set(dep.Spec.Template.Labels))).To(BeTrue(), "the NetworkPolicy selects the manager's pods")
	Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))

	from := map[int32][]networkingv1.NetworkPolicyPeer{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			Expect(p.Port).NotTo(BeNil(), "a rule opens every port")
			from[p.Port.IntVal] = rule.From
		}
	}
	metricsPort, livePort := int32(0), int32(0)
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		switch p.Name {
		case "metrics":
			metricsPort = p.ContainerPort
		case "live-api":
			livePort = p.ContainerPort
		}
	}
	Expect(metricsPort).NotTo(BeZero(), "the manager has a metrics port")
	Expect(livePort).To(BeEquivalentTo(liveAPIPort), "the manager's container declares the live API's port (config/manager)")
	Expect(from).To(HaveLen(2), "only the live API's and the metrics ports are open: %v", from)
	Expect(from).To(HaveKeyWithValue(int32(liveAPIPort), BeEmpty()), "the live API's port is open to any source")
	Expect(from[metricsPort]).To(ConsistOf(HaveField("NamespaceSelector.MatchLabels", HaveKeyWithValue("metrics", "enabled"))),
		"the metrics port is open to namespaces labelled metrics: enabled only")
}
