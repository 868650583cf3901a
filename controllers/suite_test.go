package controllers_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/echo-operator/echo-operator/cmd/manager/app"
	"github.com/echo-operator/echo-operator/controllers"
	"github.com/echo-operator/echo-operator/internal/helmreconciler"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// The integration tests run the operator's whole manager (Helm release
// reconcilers and Go controllers) in process against a real kube-apiserver
// and etcd. Nothing runs Deployments there: tests play the part of the
// Deployment controller by writing Deployment status themselves.

const (
	testEchoImage  = "registry.example.test/echo-server:test"
	testMoverImage = "registry.example.test/echo-operator:test"
	// testOperatorNamespace is the operator's own namespace.
	testOperatorNamespace = "echo-operator-system"
	// testStorageEndpoints are the endpoints the operator's administrator
	// allows every token and SSE-C key to be sent to
	// (--storage-endpoints): no other test names them.
	testStorageEndpoints = "https://s3.shared.example.test, https://sts.shared.example.test"
)

// testMoverEnv is the proxy settings the operator passes on to the data
// mover pods, as cmd/manager reads them from OLM's variables.
var testMoverEnv = []corev1.EnvVar{
	{Name: "HTTPS_PROXY", Value: "http://proxy.example.test:3128"},
	{Name: "https_proxy", Value: "http://proxy.example.test:3128"},
	{Name: "NO_PROXY", Value: ".svc,10.0.0.0/8"},
	{Name: "no_proxy", Value: ".svc,10.0.0.0/8"},
}

// storageEnv is a mover container's environment without the proxy
// settings of testMoverEnv, after checking it has them all: what the
// storage adds.
func storageEnv(g Gomega, env []corev1.EnvVar) []corev1.EnvVar {
	g.Expect(env).To(ContainElements(testMoverEnv), "the cluster's proxy settings reach the mover")
	return slices.DeleteFunc(slices.Clone(env), func(e corev1.EnvVar) bool { return slices.Contains(testMoverEnv, e) })
}

// clock drives the backup schedules, so tests move time instead of waiting.
var clock = &testClock{now: time.Now()}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d past the later of its time and the real time,
// so that objects created since the last move are not in its future.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if real := time.Now(); c.now.Before(real) {
		c.now = real
	}
	c.now = c.now.Add(d)
}

var (
	cfg       *rest.Config
	k8sClient client.Client
	clientset *kubernetes.Clientset
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Unit tests only: integration tests skip without a control plane.
		os.Exit(m.Run())
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	if os.Getenv("TEST_ASSET_KUBE_APISERVER") == "" || os.Getenv("TEST_ASSET_ETCD") == "" {
		fmt.Fprintln(os.Stderr, "TEST_ASSET_KUBE_APISERVER and TEST_ASSET_ETCD are unset: run the tests with `make test`")
		return 1
	}
	if os.Getenv("TEST_VERBOSE") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	} else {
		ctrl.SetLogger(logr.Discard())
	}

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	if k8sClient, err = client.New(cfg, client.Options{Scheme: app.NewScheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	clientset = kubernetes.NewForConfigOrDie(cfg)
	podLogs.api = controllers.ClientsetPodLogs(clientset)
	if err := k8sClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testOperatorNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	ctx, cancel := context.WithCancel(context.Background())
	done, err := startManager(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the manager:", err)
		cancel()
		return 1
	}
	code := m.Run()
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		fmt.Fprintln(os.Stderr, "the manager did not stop within 30s")
	}
	return code
}

// startManager runs the operator's manager, configured as in production,
// until ctx ends.
func startManager(ctx context.Context) (<-chan struct{}, error) {
	watches, err := writeWatchesFile()
	if err != nil {
		return nil, err
	}
	storageEndpoints, err := storagesecrets.ParseClusterEndpoints(testStorageEndpoints)
	if err != nil {
		return nil, err
	}
	mgrCfg := rest.CopyConfig(cfg)
	mgrCfg.Wrap(managerRequests.wrap)
	mgr, err := app.NewManager(mgrCfg, app.Options{
		MetricsAddr: "0",
		ProbeAddr:   "0",
		MoverImage:  testMoverImage,
		MoverEnv:    testMoverEnv,
		PodLogs:     podLogs,
		Now:         clock.Now,
		// Progress reaches the status within a second here, not ten; that
		// of an install is held back as it is by default, so that an
		// install the test rolls out is written once, at Ready.
		ProgressStatusDelay: time.Second,
		// The release signing key is created there on start.
		OperatorNamespace: testOperatorNamespace,
		StorageEndpoints:  storageEndpoints,
		Helm: helmreconciler.Options{
			WatchesFile:                    watches,
			DefaultEchoImage:               testEchoImage,
			MaxReleaseHistory:              3,
			DefaultMaxConcurrentReconciles: 4,
		},
	})
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return done, nil
}

// writeWatchesFile copies the project's watches.yaml with the chart path
// made absolute, since tests run in this package's directory.
func writeWatchesFile() (string, error) {
	chart, err := filepath.Abs(filepath.Join("..", "helm-charts", "echo"))
	if err != nil {
		return "", err
	}
	raw, err := os.ReadFile(filepath.Join("..", "watches.yaml"))
	if err != nil {
		return "", err
	}
	if !strings.Contains(string(raw), "chart: helm-charts/echo") {
		return "", fmt.Errorf("watches.yaml no longer points at helm-charts/echo")
	}
	out := []byte(strings.ReplaceAll(string(raw), "chart: helm-charts/echo", "chart: "+chart))
	f, err := os.CreateTemp("", "watches-*.yaml")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Write(out); err != nil {
		return "", err
	}
	return f.Name(), nil
}
