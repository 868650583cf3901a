package controllers_test

import (
	"context"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	gomegatypes "github.com/onsi/gomega/types"
	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/events"
)

const (
	timeout  = 30 * time.Second
	interval = 50 * time.Millisecond
)

// newNamespace creates a namespace of its own for a test.
// Every integration test starts here; in -short mode they are skipped.
func newNamespace(t *testing.T) string {
	t.Helper()
	if k8sClient == nil {
		t.Skip("needs the control plane: not run in -short mode")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "echo-test-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	// The credentials newBackup names, opted in as the docs tell: no Job
	// names a Secret that does not exist.
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "s3-credentials",
		Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"}}
	if err := k8sClient.Create(context.Background(), creds); err != nil {
		t.Fatalf("creating the storage credentials: %v", err)
	}
	return ns.Name
}

// newEcho returns an Echo with the given changes applied.
func newEcho(ns, name string, mutate ...func(*echov1alpha1.Echo)) *echov1alpha1.Echo {
	e := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, m := range mutate {
		m(e)
	}
	return e
}

func createEcho(t *testing.T, e *echov1alpha1.Echo) *echov1alpha1.Echo {
	t.Helper()
	if err := k8sClient.Create(context.Background(), e); err != nil {
		t.Fatalf("creating Echo %s/%s: %v", e.Namespace, e.Name, err)
	}
	return e
}

// updateEcho applies a change to the latest version of an Echo.
func updateEcho(t *testing.T, key types.NamespacedName, mutate func(*echov1alpha1.Echo)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		e := &echov1alpha1.Echo{}
		if err := k8sClient.Get(context.Background(), key, e); err != nil {
			return err
		}
		mutate(e)
		return k8sClient.Update(context.Background(), e)
	})
	if err != nil {
		t.Fatalf("updating Echo %s: %v", key, err)
	}
}

func getEcho(g Gomega, key types.NamespacedName) *echov1alpha1.Echo {
	e := &echov1alpha1.Echo{}
	g.Expect(k8sClient.Get(context.Background(), key, e)).To(Succeed())
	return e
}

func readyCondition(e *echov1alpha1.Echo) metav1.Condition {
	if c := meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// getDeployment waits for the Deployment of an Echo to render generation gen
// of its spec (any generation when gen is 0).
func getDeployment(t *testing.T, key types.NamespacedName, gen int64) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(context.Background(), key, d)).To(Succeed())
		if gen > 0 {
			g.Expect(d.Annotations).To(HaveKeyWithValue(echov1alpha1.SpecGenerationAnnotation, itoa(gen)))
		}
	}, timeout, interval).Should(Succeed())
	return d
}

// markDeploymentAvailable plays the Deployment controller: it reports
// every desired replica updated, ready and available.
func markDeploymentAvailable(t *testing.T, key types.NamespacedName) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := k8sClient.Get(context.Background(), key, d); err != nil {
			return err
		}
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation,
			Replicas:           n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{
				Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
				LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
		}
		return k8sClient.Status().Update(context.Background(), d)
	})
	if err != nil {
		t.Fatalf("marking Deployment %s available: %v", key, err)
	}
}

// scaleDeployment plays the autoscaler: it sets the Deployment's replicas.
func scaleDeployment(t *testing.T, key types.NamespacedName, n int32) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := k8sClient.Get(context.Background(), key, d); err != nil {
			return err
		}
		d.Spec.Replicas = ptr.To(n)
		return k8sClient.Update(context.Background(), d)
	})
	if err != nil {
		t.Fatalf("scaling Deployment %s: %v", key, err)
	}
}

// pauseEcho annotates an Echo to pause its release and waits until the
// release reconciler reports it paused.
func pauseEcho(t *testing.T, key types.NamespacedName) {
	t.Helper()
	updateEcho(t, key, func(e *echov1alpha1.Echo) {
		e.Annotations = map[string]string{echov1alpha1.PauseAnnotation: "true"}
	})
	Eventually(func(g Gomega) metav1.ConditionStatus {
		return conditionStatus(getEcho(g, key), echov1alpha1.EchoConditionPaused)
	}, timeout, interval).Should(Equal(metav1.ConditionTrue))
}

// waitReady waits for an Echo to be Ready for its current generation.
func waitReady(t *testing.T, key types.NamespacedName) *echov1alpha1.Echo {
	t.Helper()
	var e *echov1alpha1.Echo
	Eventually(func(g Gomega) {
		e = getEcho(g, key)
		c := readyCondition(e)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "Ready: %s: %s", c.Reason, c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(e.Generation))
		g.Expect(e.Status.ObservedGeneration).To(Equal(e.Generation))
	}, timeout, interval).Should(Succeed())
	return e
}

// rollOut waits for the release of the Echo's current generation, then
// reports its Deployment available and waits for the Echo to be Ready.
func rollOut(t *testing.T, key types.NamespacedName) *echov1alpha1.Echo {
	t.Helper()
	e := &echov1alpha1.Echo{}
	if err := k8sClient.Get(context.Background(), key, e); err != nil {
		t.Fatal(err)
	}
	getDeployment(t, key, e.Generation)
	markDeploymentAvailable(t, key)
	return waitReady(t, key)
}

// expectGone waits until an object no longer exists.
func expectGone(t *testing.T, obj client.Object) {
	t.Helper()
	Eventually(func() bool {
		err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "%T %s still exists", obj, client.ObjectKeyFromObject(obj))
}

// reconcileCount reads how many reconciles a controller has finished, from
// the manager's own metrics.
func reconcileCount(controller string) float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return -1
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "controller") == controller {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// objectEvents lists the events.k8s.io/v1 Events recorded for an object.
func objectEvents(g Gomega, ns, name string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// operatorEvent matches an Event the operator recorded on obj, with the
// action of its reason.
func operatorEvent(obj client.Object, eventtype, reason string) gomegatypes.GomegaMatcher {
	return And(
		HaveField("Regarding.UID", obj.GetUID()),
		HaveField("Regarding.Name", obj.GetName()),
		HaveField("Type", eventtype),
		HaveField("Reason", reason),
		HaveField("Action", echov1alpha1.EventAction(reason)),
		HaveField("ReportingController", events.ReportingController),
	)
}

// eventReasons lists the reasons of the Events recorded for an object.
func eventReasons(g Gomega, ns, name string) []string {
	var out []string
	for _, ev := range objectEvents(g, ns, name) {
		out = append(out, ev.Reason)
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// object is an object of one of the echo.dev kinds, unstructured so that
// it can hold values the Go types cannot.
func object(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// s3Storage is the storage of a backup in an S3 bucket, unstructured.
func s3Storage(mutate ...func(map[string]any)) map[string]any {
	s3 := map[string]any{
		"bucket":               "echo-backups",
		"endpoint":             "https://s3.example.test",
		"credentialsSecretRef": map[string]any{"name": "s3-credentials"},
	}
	for _, m := range mutate {
		m(s3)
	}
	return map[string]any{"s3": s3}
}

// managerRequests counts the requests the manager sends to the API server.
var managerRequests = &requestCounter{counts: map[string]int{}}

// requestCounter counts requests by verb and path, watches left out.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.URL.Query().Get("watch") != "true" {
			c.mu.Lock()
			c.counts[req.Method+" "+req.URL.Path]++
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// snapshot returns the counts so far.
func (c *requestCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// since returns the requests to a namespace sent after an earlier snapshot.
func (c *requestCounter) since(before map[string]int, namespace string) map[string]int {
	out := map[string]int{}
	for k, n := range c.snapshot() {
		if !strings.Contains(k, "/namespaces/"+namespace+"/") {
			continue
		}
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// advanceAndPoke moves the reconcilers' clock forward and makes the object
// (an empty one of its kind, filled from key) reconcile now rather than
// when its real-time requeue comes.
func advanceAndPoke(t *testing.T, obj client.Object, key types.NamespacedName, d time.Duration) {
	t.Helper()
	clock.Advance(d)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8sClient.Get(context.Background(), key, obj); err != nil {
			return err
		}
		obj.SetAnnotations(map[string]string{"example.test/poke": clock.Now().String()})
		return k8sClient.Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatal(err)
	}
}
