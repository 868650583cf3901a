package managerpolicy

import (
	"net/netip"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Name is the NetworkPolicy's name, in the manager's namespace.
const Name = "echo-operator-controller-manager"

// The manager container's named ports the policy opens.
const (
	// LiveAPIPortName is the live API's port: open to the control
	// plane's addresses (LiveAPISourcesFlag), or to any source where
	// they are not given, as kube-apiserver calls it and no
	// NetworkPolicy can select it.
	LiveAPIPortName = "live-api"
	// MetricsPortName is the metrics port: open to the namespaces
	// labelled MetricsNamespaceLabel=enabled only.
	MetricsPortName = "metrics"
	// MetricsNamespaceLabel labels the namespaces (Prometheus') that may
	// scrape the metrics.
	MetricsNamespaceLabel = "metrics"
)

// The manager's flag, and the environment variable for installs whose
// arguments an administrator does not write (OLM's), that list the
// control plane's addresses, the only sources of the live API's port.
const (
	LiveAPISourcesFlag = "live-api-sources"
	LiveAPISourcesEnv  = "LIVE_API_SOURCES"
)

// Build is the NetworkPolicy of the manager Deployment dep's pods: it
// selects them by the Deployment's selector, is owned by the Deployment,
// and allows ingress on the container ports named LiveAPIPortName (from
// liveAPISources, the control plane's addresses; from anywhere when none
// are given) and MetricsPortName (from namespaces labelled metrics:
// enabled) only. A node may always reach its own pods, so the kubelet's
// probes need no rule. A port the Deployment does not declare gets no rule.
func Build(dep *appsv1.Deployment, liveAPISources []netip.Prefix) *networkingv1.NetworkPolicy {
	np := &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name: Name, Namespace: dep.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "echo-operator", "app.kubernetes.io/managed-by": "echo-operator"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment", Name: dep.Name, UID: dep.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{},
		},
	}
	if dep.Spec.Selector != nil {
		np.Spec.PodSelector = *dep.Spec.Selector.DeepCopy()
	}
	if port, ok := containerPort(dep, LiveAPIPortName); ok {
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{Ports: tcp(port), From: ipBlocks(liveAPISources)})
	}
	if port, ok := containerPort(dep, MetricsPortName); ok {
		np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{
			Ports: tcp(port),
			From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{MetricsNamespaceLabel: "enabled"}}}},
		})
	}
	return np
}

// containerPort is the port named name of the Deployment's first
// container, the manager.
func containerPort(dep *appsv1.Deployment, name string) (int32, bool) {
	containers := dep.Spec.Template.Spec.Containers
	if len(containers) == 0 {
		return 0, false
	}
	for _, p := range containers[0].Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

func tcp(port int32) []networkingv1.NetworkPolicyPort {
	return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(port))}}
}

// ipBlocks are peers of the addresses of prefixes, nil (any source) for
// none.
func ipBlocks(prefixes []netip.Prefix) []networkingv1.NetworkPolicyPeer {
	var peers []networkingv1.NetworkPolicyPeer
	for _, p := range prefixes {
		peers = append(peers, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: p.Masked().String()}})
	}
	return peers
}
