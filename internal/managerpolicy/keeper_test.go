package managerpolicy

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/controlplane"
)

// TestKeeperAppliesThePolicy against a real API server: the first apply
// creates the policy owned by the Deployment; another changes nothing;
// an edit of it is undone; a port added to the Deployment is opened; no
// Deployment is an error that says what to fix.
func TestKeeperAppliesThePolicy(t *testing.T) {
	cfg := controlplane.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "operator"}}
	g.Expect(c.Create(ctx, ns)).To(Succeed())
	dep := deployment(corev1.ContainerPort{Name: MetricsPortName, ContainerPort: 8443})
	dep.UID, dep.Namespace = "", ns.Name
	dep.Spec.Template.Labels = dep.Spec.Selector.MatchLabels
	dep.Spec.Template.Spec.Containers[0].Image = "manager"
	g.Expect(c.Create(ctx, dep)).To(Succeed())
	k := &Keeper{Client: c, Reader: c, Namespace: ns.Name, Deployment: dep.Name, Log: logr.Discard()}

	g.Expect(k.Apply(ctx)).To(Succeed())
	np := &networkingv1.NetworkPolicy{}
	key := client.ObjectKey{Namespace: ns.Name, Name: Name}
	g.Expect(c.Get(ctx, key, np)).To(Succeed())
	g.Expect(np.OwnerReferences).To(ConsistOf(HaveField("UID", dep.UID)), "owned by the Deployment: an uninstall removes it")
	g.Expect(np.Spec.Ingress).To(HaveLen(1))

	g.Expect(k.Apply(ctx)).To(Succeed())
	again := &networkingv1.NetworkPolicy{}
	g.Expect(c.Get(ctx, key, again)).To(Succeed())
	g.Expect(again.ResourceVersion).To(Equal(np.ResourceVersion), "an apply that changes nothing writes nothing")

	again.Spec.Ingress = nil
	g.Expect(c.Update(ctx, again)).To(Succeed())
	g.Expect(k.Apply(ctx)).To(Succeed())
	g.Expect(c.Get(ctx, key, again)).To(Succeed())
	g.Expect(again.Spec.Ingress).To(Equal(np.Spec.Ingress), "an edit is undone")

	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	dep.Spec.Template.Spec.Containers[0].Ports = append(dep.Spec.Template.Spec.Containers[0].Ports,
		corev1.ContainerPort{Name: LiveAPIPortName, ContainerPort: 9443})
	g.Expect(c.Update(ctx, dep)).To(Succeed())
	g.Expect(k.Apply(ctx)).To(Succeed())
	g.Expect(c.Get(ctx, key, again)).To(Succeed())
	g.Expect(again.Spec.Ingress).To(HaveLen(2), "the live API's port is opened once the Deployment declares it")

	missing := &Keeper{Client: c, Reader: c, Namespace: ns.Name, Deployment: "other", Log: logr.Discard()}
	g.Expect(missing.Apply(ctx)).To(MatchError(ContainSubstring("--manager-deployment")))
}
