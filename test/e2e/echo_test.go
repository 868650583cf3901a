//go:build linux

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

const (
	timeout  = 2 * time.Minute
	interval = 200 * time.Millisecond
)

// createNamespace creates a namespace; labels may enforce a Pod Security level.
func createNamespace(ctx context.Context, name string, labels map[string]string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

// newRestrictedNamespace creates a namespace that enforces the restricted
// Pod Security Standard, so every pod the operator makes must comply.
func newRestrictedNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func getEcho(g Gomega, key types.NamespacedName) *echov1alpha1.Echo {
	e := &echov1alpha1.Echo{}
	g.Expect(k8sClient.Get(context.Background(), key, e)).To(Succeed())
	return e
}

// waitReady waits until the Echo reports Ready for its current generation
// with want ready replicas, as the real Deployment controller and KWOK's
// pods make it.
func waitReady(t *testing.T, key types.NamespacedName, want int32) *echov1alpha1.Echo {
	t.Helper()
	var e *echov1alpha1.Echo
	Eventually(func(g Gomega) {
		e = getEcho(g, key)
		c := meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(e.Status.ObservedGeneration).To(Equal(e.Generation))
		g.Expect(e.Status.ReadyReplicas).To(Equal(want))
	}, timeout, interval).Should(Succeed())
	return e
}

func updateEcho(t *testing.T, key types.NamespacedName, mutate func(*echov1alpha1.Echo)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		e := &echov1alpha1.Echo{}
		if err := k8sClient.Get(context.Background(), key, e); err != nil {
			return err
		}
		mutate(e)
		return k8sClient.Update(context.Background(), e)
	}); err != nil {
		t.Fatal(err)
	}
}

// runningPods lists the Echo's pods that are Running and Ready.
func runningPods(g Gomega, key types.NamespacedName) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(context.Background(), pods, client.InNamespace(key.Namespace),
		client.MatchingLabels{chart.InstanceLabel: chart.ReleaseName(key.Name)})).To(Succeed())
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(p) {
			out = append(out, p)
		}
	}
	return out
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestEchoRunsScalesAndHeals(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newRestrictedNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: echov1alpha1.EchoSpec{
			Replicas:         ptr.To[int32](3),
			Message:          "hello, e2e",
			HighAvailability: &echov1alpha1.HighAvailabilitySpec{Enabled: true},
		},
	})).To(Succeed())

	e := waitReady(t, key, 3)
	Expect(e.Status.Address).To(Equal(fmt.Sprintf("http://web.%s.svc:80", ns)))
	Eventually(func(g Gomega) { g.Expect(runningPods(g, key)).To(HaveLen(3)) }, timeout, interval).Should(Succeed())
	Expect(k8sClient.Get(ctx, key, &policyv1.PodDisruptionBudget{})).To(Succeed())

	t.Run("scale through the scale subresource", func(t *testing.T) {
		RegisterTestingT(t)
		scale := &autoscalingv1.Scale{}
		Expect(k8sClient.SubResource("scale").Get(ctx, getEcho(Default, key), scale)).To(Succeed())
		Expect(scale.Status.Selector).To(ContainSubstring(chart.InstanceLabel + "=" + chart.ReleaseName(key.Name)))
		scale.Spec.Replicas = 4
		Expect(k8sClient.SubResource("scale").Update(ctx, getEcho(Default, key), client.WithSubResourceBody(scale))).To(Succeed())
		waitReady(t, key, 4)
		Eventually(func(g Gomega) { g.Expect(runningPods(g, key)).To(HaveLen(4)) }, timeout, interval).Should(Succeed())
	})

	t.Run("a deleted pod is replaced", func(t *testing.T) {
		RegisterTestingT(t)
		pods := runningPods(Default, key)
		Expect(k8sClient.Delete(ctx, &pods[0])).To(Succeed())
		Eventually(func(g Gomega) {
			now := runningPods(g, key)
			g.Expect(now).To(HaveLen(4))
			for _, p := range now {
				g.Expect(p.UID).NotTo(Equal(pods[0].UID))
			}
		}, timeout, interval).Should(Succeed())
		waitReady(t, key, 4)
	})

	t.Run("a deleted Deployment is recreated", func(t *testing.T) {
		RegisterTestingT(t)
		d := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, key, d)).To(Succeed())
		Expect(k8sClient.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		Eventually(func(g Gomega) {
			again := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(d.UID))
		}, timeout, interval).Should(Succeed())
		waitReady(t, key, 4)
	})

	t.Run("a new message rolls out", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = "changed" })
		waitReady(t, key, 4)
		Eventually(func(g Gomega) {
			pods := runningPods(g, key)
			g.Expect(pods).To(HaveLen(4))
			for _, p := range pods {
				g.Expect(p.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "changed"}))
			}
		}, timeout, interval).Should(Succeed())
	})
}

func TestEchoWithPersistence(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newRestrictedNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "journal"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec:       echov1alpha1.EchoSpec{Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}},
	})).To(Succeed())
	waitReady(t, key, 1)

	pvc := &corev1.PersistentVolumeClaim{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: chart.DataClaimName(key.Name)}, pvc)).To(Succeed())
	Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	pods := runningPods(Default, key)
	Expect(pods).To(HaveLen(1))
	Expect(pods[0].Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", chart.DataClaimName(key.Name))))
}

func TestEchoDeleteCollectsEverything(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newRestrictedNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "short-lived"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: echov1alpha1.EchoSpec{
			Replicas:    ptr.To[int32](1),
			Persistence: &echov1alpha1.PersistenceSpec{Enabled: true},
		},
	})).To(Succeed())
	waitReady(t, key, 1)

	Expect(k8sClient.Delete(ctx, getEcho(Default, key))).To(Succeed())
	Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, key, &echov1alpha1.Echo{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Echo is gone: its finalizers were released")
		for _, list := range []client.ObjectList{
			&appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{},
			&corev1.ServiceList{}, &corev1.PersistentVolumeClaimList{},
		} {
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			g.Expect(meta.LenList(list)).To(BeZero(), "%T left behind", list)
		}
		secrets := &corev1.SecretList{}
		g.Expect(k8sClient.List(ctx, secrets, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: chart.ReleaseRecordSelector()})).To(Succeed())
		g.Expect(secrets.Items).To(BeEmpty(), "release history left behind")
	}, timeout, interval).Should(Succeed())
}

func TestEchoesWithTheSameNameInTwoNamespaces(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	nsA, nsB := newRestrictedNamespace(t), newRestrictedNamespace(t)
	for _, ns := range []string{nsA, nsB} {
		Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twin"},
			Spec:       echov1alpha1.EchoSpec{Message: "from " + ns},
		})).To(Succeed())
	}
	keyA, keyB := types.NamespacedName{Namespace: nsA, Name: "twin"}, types.NamespacedName{Namespace: nsB, Name: "twin"}
	waitReady(t, keyA, 1)
	waitReady(t, keyB, 1)
	podB := runningPods(Default, keyB)[0]
	Expect(podB.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "from " + nsB}))

	Expect(k8sClient.Delete(ctx, getEcho(Default, keyA))).To(Succeed())
	Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, keyA, &echov1alpha1.Echo{})) }, timeout, interval).Should(BeTrue())
	e := waitReady(t, keyB, 1)
	Expect(e.Status.ReadyReplicas).To(BeEquivalentTo(1))
	Expect(runningPods(Default, keyB)[0].UID).To(Equal(podB.UID), "the twin's pod was not touched")
}
