package app_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/cmd/manager/app"
	"github.com/echo-operator/echo-operator/internal/helmreconciler"
	"github.com/echo-operator/echo-operator/test/harness/olderschema"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

const (
	timeout  = 30 * time.Second
	interval = 50 * time.Millisecond
)

// A manager that starts while an object of its kinds that does not decode
// is stored (an operator restarted, or upgraded, after an older schema
// admitted the value) becomes Ready in the usual few seconds, far within
// the two minutes after which its controllers would give up on their
// caches, and reconciles everything else. Controller names are unique per
// process, so this test runs the manager in this package's binary, apart
// from the controllers suite and its running manager.
func TestManagerStartsBesideAnUndecodableObject(t *testing.T) {
	g := NewWithT(t)
	cfg, c := startControlPlane(t)
	ctx := context.Background()
	ns := createNamespace(t, c)
	goodKey := types.NamespacedName{Namespace: ns, Name: "nightly"}
	g.Expect(c.Create(ctx, schedule(goodKey, "168h"))).To(Succeed())
	bad := storeUndecodableSchedule(t, c, types.NamespacedName{Namespace: ns, Name: "weekly"})

	operatorNS := createNamespace(t, c)
	mgr, probe := startOperator(t, cfg, operatorNS)

	// The informers of every kind sync (the manager's controllers wait
	// for them before they reconcile anything), then the probe says Ready.
	for _, obj := range []client.Object{&echov1alpha1.EchoBackupSchedule{}, &echov1alpha1.EchoBackup{}, &echov1alpha1.Echo{}, &echov1alpha1.EchoRestore{}} {
		informer, err := mgr.GetCache().GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(informer.HasSynced, timeout, interval).Should(BeTrue(), "the informer of %T did not sync", obj)
	}
	g.Eventually(func() (int, error) { return readyz(probe) }, timeout, interval).Should(Equal(http.StatusOK))
	waitScheduleReconciled(g, c, goodKey)
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(c.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(
			HaveField("Regarding.UID", bad.GetUID()),
			HaveField("Type", corev1.EventTypeWarning),
			HaveField("Reason", echov1alpha1.EventReasonUndecodableObject),
			HaveField("Action", echov1alpha1.EventActionDecoding),
			HaveField("Note", ContainSubstring("spec.retention.maxAge")),
		)))
	}, timeout, interval).Should(Succeed())

	fix := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"retention":{"maxAge":"168h"}}}`))
	g.Expect(c.Patch(ctx, bad, fix)).To(Succeed())
	waitScheduleReconciled(g, c, client.ObjectKeyFromObject(bad))

	// Elected leader, the manager said so on the Lease in its own
	// namespace, through events.k8s.io/v1 like every Event it records.
	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(c.List(ctx, events, client.InNamespace(operatorNS))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(
			HaveField("Regarding.Kind", "Lease"),
			HaveField("Regarding.Name", "echo-operator.echo.dev"),
			HaveField("Reason", "LeaderElection"),
			HaveField("Action", "ElectingLeader"),
			HaveField("ReportingController", "echo-operator"),
			HaveField("Note", ContainSubstring("became leader")),
		)))
	}, timeout, interval).Should(Succeed())
}

// startControlPlane starts a kube-apiserver and etcd with the operator's
// CRDs, and returns their config and a client.
func startControlPlane(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	if testing.Short() || os.Getenv("TEST_ASSET_KUBE_APISERVER") == "" || os.Getenv("TEST_ASSET_ETCD") == "" {
		t.Skip("needs the control plane (TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD): run with `make test`")
	}
	if os.Getenv("TEST_VERBOSE") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(reporoot.Must(t), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, c
}

func createNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "echo-test-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// startOperator runs the operator's manager, electing itself leader as in
// production, until the test ends and returns it with the address of its
// health probes.
func startOperator(t *testing.T, cfg *rest.Config, namespace string) (ctrl.Manager, string) {
	t.Helper()
	probe := freeAddress(t)
	mgr, err := app.NewManager(cfg, app.Options{
		MetricsAddr:       "0",
		ProbeAddr:         probe,
		LeaderElect:       true,
		MoverImage:        "registry.example.test/echo-operator:test",
		OperatorNamespace: namespace,
		Helm: helmreconciler.Options{
			WatchesFile:                    watchesFile(t),
			DefaultEchoImage:               "registry.example.test/echo-server:test",
			MaxReleaseHistory:              3,
			DefaultMaxConcurrentReconciles: 4,
		},
	})
	if err != nil {
		t.Fatalf("building the manager: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager failed: %v", err)
		}
	})
	return mgr, probe
}

// freeAddress returns a local address no one listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func readyz(addr string) (int, error) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// watchesFile writes the project's watches.yaml with the chart path made
// absolute, since tests run in this package's directory.
func watchesFile(t *testing.T) string {
	t.Helper()
	root := reporoot.Must(t)
	chart := filepath.Join(root, "helm-charts", "echo")
	raw, err := os.ReadFile(filepath.Join(root, "watches.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "chart: helm-charts/echo") {
		t.Fatal("watches.yaml no longer points at helm-charts/echo")
	}
	path := filepath.Join(t.TempDir(), "watches.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), "chart: helm-charts/echo", "chart: "+chart)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func schedule(key types.NamespacedName, maxAge string) *unstructured.Unstructured {
	s := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"schedule":  "@every 1h",
		"retention": map[string]any{"maxAge": maxAge},
		"template": map[string]any{"echoName": "web", "storage": map[string]any{"s3": map[string]any{
			"bucket": "echo-backups", "endpoint": "https://s3.example.test",
			"credentialsSecretRef": map[string]any{"name": "s3-credentials"},
		}}},
	}}}
	s.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("EchoBackupSchedule"))
	s.SetNamespace(key.Namespace)
	s.SetName(key.Name)
	return s
}

// waitScheduleReconciled waits for a schedule's controller to report its
// current generation Ready.
func waitScheduleReconciled(g *WithT, c client.Client, key types.NamespacedName) {
	g.Eventually(func(g Gomega) {
		s := &echov1alpha1.EchoBackupSchedule{}
		g.Expect(c.Get(context.Background(), key, s)).To(Succeed())
		g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, echov1alpha1.ScheduleConditionReady)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

// storeUndecodableSchedule stores an EchoBackupSchedule whose
// spec.retention.maxAge, "7d", is no Go duration: the CRD's schema is
// loosened for the create, as an older schema was, then restored.
func storeUndecodableSchedule(t *testing.T, c client.Client, key types.NamespacedName) *unstructured.Unstructured {
	t.Helper()
	bad := schedule(key, "7d")
	restore := loosenMaxAge(t, c)
	defer restore()
	// The API server takes a changed schema up asynchronously.
	NewWithT(t).Eventually(func() error { return c.Create(context.Background(), bad) }, timeout, interval).Should(Succeed())
	return bad
}

var crdKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// loosenMaxAge drops from the EchoBackupSchedule CRD every rule that could
// refuse a maxAge of "7d", whatever rules the CRD carries: the validations
// of the property itself and the CEL rules of its ancestors that mention
// it. It returns the function that restores the CRD.
func loosenMaxAge(t *testing.T, c client.Client) (restore func()) {
	t.Helper()
	var strict []any
	updateScheduleCRD(t, c, func(crd *unstructured.Unstructured) error {
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if err != nil {
			return err
		}
		strict = versions
		loose := olderschema.LooseMaxAge(versions)
		return unstructured.SetNestedSlice(crd.Object, loose, "spec", "versions")
	})
	return func() {
		updateScheduleCRD(t, c, func(crd *unstructured.Unstructured) error {
			return unstructured.SetNestedSlice(crd.Object, strict, "spec", "versions")
		})
	}
}

func updateScheduleCRD(t *testing.T, c client.Client, mutate func(*unstructured.Unstructured) error) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdKind)
		if err := c.Get(context.Background(), client.ObjectKey{Name: "echobackupschedules.echo.dev"}, crd); err != nil {
			return err
		}
		if err := mutate(crd); err != nil {
			return err
		}
		return c.Update(context.Background(), crd)
	})
	if err != nil {
		t.Fatalf("updating the EchoBackupSchedule CRD: %v", err)
	}
}
