package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/cachetrim"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/test/harness/largestecho"
)

func TestEchoCreateRendersChildrenAndBecomesReady(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "hello"}
	requests := managerRequests.snapshot()
	createEcho(t, newEcho(ns, key.Name))

	d := getDeployment(t, key, 1)
	Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](1)))
	Expect(metav1.IsControlledBy(d, getEcho(Default, key))).To(BeTrue(), "the Deployment is controlled by the Echo")
	c := d.Spec.Template.Spec.Containers[0]
	Expect(c.Image).To(Equal(testEchoImage), "the default image comes from RELATED_IMAGE_ECHO")
	Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "Hello from Echo"}))
	Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	Expect(*d.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(BeTrue())

	svc := &corev1.Service{}
	Expect(k8sClient.Get(context.Background(), key, svc)).To(Succeed())
	Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(80))

	// The Deployment exists but no pod is available: not Ready yet, and
	// an install's progress is held back (DefaultRolloutStatusDelay).
	Consistently(func(g Gomega) []metav1.Condition { return getEcho(g, key).Status.Conditions }, "1s", interval).
		Should(BeEmpty(), "an install is reported once, when it is Ready")

	markDeploymentAvailable(t, key)
	e := waitReady(t, key)
	Expect(e.Finalizers).To(ContainElement("uninstall-helm-release"))
	Expect(readyCondition(e).Reason).To(Equal(echov1alpha1.EchoReasonAvailable))
	Expect(meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionDeployed)).To(PointTo(MatchFields(IgnoreExtras, Fields{
		"Status": Equal(metav1.ConditionTrue), "Reason": Equal(echov1alpha1.EchoReasonInstallSuccessful),
		"Message": ContainSubstring(`Echo server "hello"`)})), "the chart's notes")
	Expect(managerRequests.since(requests, ns)).To(HaveKeyWithValue("PATCH /apis/echo.dev/v1alpha1/namespaces/"+ns+"/echoes/hello/status", 1),
		"one status write per install: Ready, with the release's fields")
	t.Logf("install requests: %v", managerRequests.since(requests, ns))
	Expect(e.Status.ReadyReplicas).To(BeEquivalentTo(1))
	Expect(e.Status.AvailableReplicas).To(BeEquivalentTo(1))
	Expect(e.Status.Address).To(Equal("http://hello." + ns + ".svc:80"))
	Expect(e.Status.Selector).To(ContainSubstring(chart.InstanceLabel + "=hello"))
	Expect(e.Status.DeployedRelease).To(Equal(&echov1alpha1.DeployedRelease{Name: "hello"}))
	// An install's one Event is Ready, an events.k8s.io/v1 Event of
	// echo-operator that names the generation.
	Eventually(func(g Gomega) []eventsv1.Event { return objectEvents(g, ns, key.Name) }, timeout, interval).
		Should(ConsistOf(And(operatorEvent(e, corev1.EventTypeNormal, echov1alpha1.EventReasonReady),
			HaveField("Note", "Generation 1 is Ready: 1 of 1 replicas available"))))

	// An upgrade's one Event is Ready for the new generation: its rollout
	// is no loss of readiness.
	updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = "upgraded" })
	rollOut(t, key)
	Eventually(func(g Gomega) []string {
		var notes []string
		for _, ev := range objectEvents(g, ns, key.Name) {
			notes = append(notes, ev.Reason+": "+ev.Note)
		}
		return notes
	}, timeout, interval).Should(ConsistOf(
		"Ready: Generation 1 is Ready: 1 of 1 replicas available",
		"Ready: Generation 2 is Ready: 1 of 1 replicas available",
	))
}

func TestEchoStatusKeepsTheManifestOut(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "lean"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)

	// The Helm reconciler and the status controller write their parts of
	// the status independently: Ready may come first.
	Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("Echo"))
		g.Expect(k8sClient.Get(context.Background(), key, u)).To(Succeed())
		release, found, err := unstructured.NestedMap(u.Object, "status", "deployedRelease")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(release).To(Equal(map[string]any{"name": "lean"}), "the rendered manifest is not stored in status")
	}, timeout, interval).Should(Succeed())
}

func TestEchoUpdatesConverge(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "changing"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)
	ctx := context.Background()

	t.Run("replicas, image and message", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) {
			e.Spec.Replicas = ptr.To[int32](2)
			e.Spec.Image = "registry.example.test/echo-server:v2"
			e.Spec.Message = "changed"
		})
		e := rollOut(t, key)
		Expect(e.Status.Replicas).To(BeEquivalentTo(2))
		d := getDeployment(t, key, e.Generation)
		Expect(d.Spec.Replicas).To(Equal(ptr.To[int32](2)))
		Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.test/echo-server:v2"))
		Expect(d.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "changed"}))
	})

	t.Run("high availability on and off", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) {
			e.Spec.Replicas = ptr.To[int32](3)
			e.Spec.HighAvailability = &echov1alpha1.HighAvailabilitySpec{Enabled: true}
		})
		e := rollOut(t, key)
		Expect(k8sClient.Get(ctx, key, &policyv1.PodDisruptionBudget{})).To(Succeed())
		d := getDeployment(t, key, e.Generation)
		Expect(d.Spec.Template.Spec.TopologySpreadConstraints).NotTo(BeEmpty())

		updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.HighAvailability.Enabled = false })
		rollOut(t, key)
		expectGone(t, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	})

	t.Run("autoscaling on and off", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) {
			e.Spec.Autoscaling = &echov1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: 2, MaxReplicas: 6, TargetCPUUtilizationPercentage: 70}
		})
		e := getEcho(Default, key)
		getDeployment(t, key, e.Generation)
		Consistently(func(g Gomega) bool {
			c := readyCondition(getEcho(g, key))
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == e.Generation
		}, "1s", interval).Should(BeFalse(), "not Ready below the autoscaler's minimum")
		scaleDeployment(t, key, 2) // as the autoscaler would
		rollOut(t, key)
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		Expect(k8sClient.Get(ctx, key, hpa)).To(Succeed())
		Expect(hpa.Spec.MaxReplicas).To(BeEquivalentTo(6))
		Expect(*hpa.Spec.MinReplicas).To(BeEquivalentTo(2))
		Expect(hpa.Spec.ScaleTargetRef.Name).To(Equal(key.Name))

		updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Autoscaling.Enabled = false })
		rollOut(t, key)
		expectGone(t, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	})

	t.Run("persistence", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) {
			e.Spec.Replicas = ptr.To[int32](1)
			e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true, Size: ptr.To(echov1alpha1.MustBoundedQuantity("2Gi"))}
		})
		e := rollOut(t, key)
		pvc := &corev1.PersistentVolumeClaim{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: chart.DataClaimName(key.Name)}, pvc)).To(Succeed())
		Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("2Gi"))
		d := getDeployment(t, key, e.Generation)
		Expect(d.Spec.Template.Spec.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/data")))
		Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
	})

	t.Run("ingress", func(t *testing.T) {
		RegisterTestingT(t)
		updateEcho(t, key, func(e *echov1alpha1.Echo) {
			e.Spec.Ingress = &echov1alpha1.IngressSpec{Enabled: true, Host: "echo.example.test", TLSSecretName: "echo-tls"}
		})
		rollOut(t, key)
		ing := &networkingv1.Ingress{}
		Expect(k8sClient.Get(ctx, key, ing)).To(Succeed())
		Expect(ing.Spec.Rules[0].Host).To(Equal("echo.example.test"))
		Eventually(func(g Gomega) string { return getEcho(g, key).Status.ExternalAddress }, timeout, interval).
			Should(Equal("https://echo.example.test"))
	})
}

func TestEchoDriftIsRepaired(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "drifty"}
	createEcho(t, newEcho(ns, key.Name, func(e *echov1alpha1.Echo) { e.Spec.Replicas = ptr.To[int32](2) }))
	rollOut(t, key)
	ctx := context.Background()

	t.Run("deleted Deployment is recreated", func(t *testing.T) {
		RegisterTestingT(t)
		d := getDeployment(t, key, 0)
		Expect(k8sClient.Delete(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			again := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(d.UID))
		}, timeout, interval).Should(Succeed())
		rollOut(t, key)
	})

	t.Run("edited Deployment is restored", func(t *testing.T) {
		RegisterTestingT(t)
		d := getDeployment(t, key, 0)
		d.Spec.Replicas = ptr.To[int32](7)
		d.Spec.Template.Spec.Containers[0].Image = "registry.example.test/someone-else:latest"
		Expect(k8sClient.Update(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			again := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, key, again)).To(Succeed())
			g.Expect(again.Spec.Replicas).To(Equal(ptr.To[int32](2)))
			g.Expect(again.Spec.Template.Spec.Containers[0].Image).To(Equal(testEchoImage))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("deleted Service is recreated", func(t *testing.T) {
		RegisterTestingT(t)
		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, key, svc)).To(Succeed())
		Expect(k8sClient.Delete(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			again := &corev1.Service{}
			g.Expect(k8sClient.Get(ctx, key, again)).To(Succeed())
			g.Expect(again.UID).NotTo(Equal(svc.UID))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("edited Service is restored", func(t *testing.T) {
		RegisterTestingT(t)
		svc := &corev1.Service{}
		Expect(k8sClient.Get(ctx, key, svc)).To(Succeed())
		svc.Spec.Ports[0].Port = 9999
		Expect(k8sClient.Update(ctx, svc)).To(Succeed())
		Eventually(func(g Gomega) {
			again := &corev1.Service{}
			g.Expect(k8sClient.Get(ctx, key, again)).To(Succeed())
			g.Expect(again.Spec.Ports).To(HaveLen(1))
			g.Expect(again.Spec.Ports[0].Port).To(BeEquivalentTo(80))
		}, timeout, interval).Should(Succeed())
	})
}

func TestEchoSteadyStateWritesNothing(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "quiet"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)
	ctx := context.Background()

	// Let both controllers settle: the status controller on Ready (rollOut),
	// the Helm reconciler on its release status, which it may write after
	// Ready. Then poke them both with an event that changes nothing they own.
	Eventually(func(g Gomega) {
		e := getEcho(g, key)
		g.Expect(conditionStatus(e, echov1alpha1.EchoConditionDeployed)).To(Equal(metav1.ConditionTrue))
		g.Expect(e.Status.DeployedRelease).NotTo(BeNil())
	}, timeout, interval).Should(Succeed(), "the release status is written")
	before := getEcho(Default, key)
	dep := getDeployment(t, key, 0)
	helmRuns, statusRuns := reconcileCount("echo-controller"), reconcileCount("echo-status")

	svc := &corev1.Service{}
	Expect(k8sClient.Get(ctx, key, svc)).To(Succeed())
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Annotations = map[string]string{"example.test/poke": "1"}
	Expect(k8sClient.Patch(ctx, svc, patch)).To(Succeed())
	requests := managerRequests.snapshot()

	Eventually(func() bool {
		return reconcileCount("echo-controller") > helmRuns && reconcileCount("echo-status") > statusRuns
	}, timeout, interval).Should(BeTrue(), "both controllers reconciled the Echo")
	// The deployed revision was rendered from the same chart and values:
	// the release, the drift check and the status all come from the cache,
	// with no render, no release read and no object read.
	Expect(managerRequests.since(requests, ns)).To(BeEmpty(), "the reconciles of an unchanged Echo send no request")

	after := getEcho(Default, key)
	Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "an unchanged Echo is not written")
	depAfter := getDeployment(t, key, 0)
	Expect(depAfter.ResourceVersion).To(Equal(dep.ResourceVersion), "an unchanged Deployment is not written")
}

func TestEchoesWithTheSameNameInTwoNamespaces(t *testing.T) {
	RegisterTestingT(t)
	nsA, nsB := newNamespace(t), newNamespace(t)
	keyA := types.NamespacedName{Namespace: nsA, Name: "twin"}
	keyB := types.NamespacedName{Namespace: nsB, Name: "twin"}
	createEcho(t, newEcho(nsA, "twin", func(e *echov1alpha1.Echo) { e.Spec.Message = "from A" }))
	createEcho(t, newEcho(nsB, "twin", func(e *echov1alpha1.Echo) { e.Spec.Message = "from B" }))
	rollOut(t, keyA)
	rollOut(t, keyB)

	dA, dB := getDeployment(t, keyA, 0), getDeployment(t, keyB, 0)
	Expect(dA.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "from A"}))
	Expect(dB.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ECHO_MESSAGE", Value: "from B"}))

	Expect(k8sClient.Delete(context.Background(), getEcho(Default, keyA))).To(Succeed())
	expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "twin"}})
	expectGone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "twin"}})

	Consistently(func(g Gomega) {
		g.Expect(readyCondition(getEcho(g, keyB)).Status).To(Equal(metav1.ConditionTrue))
	}, "1s", interval).Should(Succeed())
	Expect(getDeployment(t, keyB, 0).UID).To(Equal(dB.UID), "the twin in the other namespace is untouched")
}

func TestEchoDeleteRemovesEverything(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "doomed"}
	createEcho(t, newEcho(ns, key.Name, func(e *echov1alpha1.Echo) {
		e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true}
		e.Spec.Ingress = &echov1alpha1.IngressSpec{Enabled: true, Host: "doomed.example.test"}
	}))
	rollOut(t, key)
	ctx := context.Background()

	Expect(k8sClient.Delete(ctx, getEcho(Default, key))).To(Succeed())
	expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	for _, obj := range []client.Object{
		&appsv1.Deployment{}, &corev1.Service{}, &networkingv1.Ingress{},
	} {
		obj.SetNamespace(ns)
		obj.SetName(key.Name)
		expectGone(t, obj)
	}
	// The control plane here runs no controller to lift the claim's
	// pvc-protection finalizer: deletion requested is all there is to see.
	Eventually(func(g Gomega) {
		pvc := &corev1.PersistentVolumeClaim{}
		err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: chart.DataClaimName(key.Name)}, pvc)
		if err == nil {
			g.Expect(pvc.DeletionTimestamp).NotTo(BeNil(), "the claim is being deleted")
		} else {
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}
	}, timeout, interval).Should(Succeed())
	Eventually(func(g Gomega) {
		secrets := &corev1.SecretList{}
		g.Expect(k8sClient.List(ctx, secrets, client.InNamespace(ns), client.MatchingLabels{chart.ReleaseOwnerLabel: chart.ReleaseOwner})).To(Succeed())
		g.Expect(secrets.Items).To(BeEmpty(), "release history is removed")
	}, timeout, interval).Should(Succeed())
}

// conditionStatus reads the status of a condition.
func conditionStatus(e *echov1alpha1.Echo, condType string) metav1.ConditionStatus {
	for _, c := range e.Status.Conditions {
		if c.Type == condType {
			return c.Status
		}
	}
	return ""
}

// A release that cannot apply (an Ingress of its name that someone else
// made is in the way) ends in a condition and an Event that say what is
// wrong, leaves that Ingress alone, and converges once the Echo no longer
// renders one.
func TestEchoReleaseFailureIsReportedAndRecovers(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "in-the-way"}
	theirs := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "their-service", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
	createEcho(t, newEcho(ns, key.Name, func(e *echov1alpha1.Echo) {
		e.Spec.Ingress = &echov1alpha1.IngressSpec{Enabled: true, Host: "echo.example.test"}
	}))

	Eventually(func(g Gomega) {
		e := getEcho(g, key)
		c := readyCondition(e)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(echov1alpha1.EchoReasonReleaseFailed))
		// The first install fails creating the Ingress; the retries, which
		// know a release was written, are refused by Helm's ownership check.
		g.Expect(c.Message).To(Or(ContainSubstring(`"in-the-way" already exists`),
			MatchRegexp(`Ingress "in-the-way" in namespace "[^"]+" exists and cannot be imported`)))
		g.Expect(conditionStatus(e, echov1alpha1.EchoConditionReleaseFailed)).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
		Should(ContainElement(echov1alpha1.EventReasonReleaseInstallFailed))

	updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Ingress.Enabled = false })
	rollOut(t, key)
	Eventually(func(g Gomega) []metav1.Condition { return getEcho(g, key).Status.Conditions }, timeout, interval).
		ShouldNot(ContainElement(HaveField("Type", echov1alpha1.EchoConditionReleaseFailed)), "a release that recovered is no longer reported failed: an absent ReleaseFailed is False")
	got := &networkingv1.Ingress{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed())
	Expect(got.UID).To(Equal(theirs.UID), "their Ingress is left alone")
	Expect(got.Spec).To(Equal(theirs.Spec), "their Ingress is left alone")
}

// A forgotten pause annotation must not keep an Echo from being deleted.
func TestPausedEchoCanBeDeleted(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "paused"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)
	pauseEcho(t, key)

	Expect(k8sClient.Delete(context.Background(), getEcho(Default, key))).To(Succeed())
	expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	expectGone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
}

// TestLargestEchoBecomesReady: the Deployment of an Echo at the largest
// admitted size is past what the cache keeps whole, so the cache holds a
// stub of it; readiness reads it from the API server and the Echo becomes
// Ready as any other.
func TestLargestEchoBecomesReady(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "largest"}
	e := &echov1alpha1.Echo{}
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(map[string]any{"spec": largestecho.RunnableSpec("standard")}, e)).To(Succeed())
	e.Namespace, e.Name = key.Namespace, key.Name
	createEcho(t, e)
	d := getDeployment(t, key, 1)
	d.ManagedFields = nil // as the cache strips them
	Expect(d.Size()).To(BeNumerically(">", cachetrim.MaxObjectBytes), "the Deployment is past the cache's bound, which this test is about")
	markDeploymentAvailable(t, key)
	waitReady(t, key)
}
