package v1alpha1_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// The admission tests send objects to a real kube-apiserver and etcd
// (envtest) with the CRDs of config/crd/bases installed, and check what the
// API server admits, defaults and refuses: the OpenAPI schemas, defaults
// and CEL rules that the kubebuilder markers of this package generate. No
// controller runs: nothing acts on the objects once stored.

var (
	k8sClient client.Client
	clientset *kubernetes.Clientset

	// noControlPlane says why the admission tests skip, or fail under CI,
	// when the suite started no control plane.
	noControlPlane string
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	switch {
	case testing.Short():
		// Unit tests only: the admission tests skip.
		noControlPlane = "needs the control plane: not run in -short mode"
		return m.Run()
	case os.Getenv("TEST_ASSET_KUBE_APISERVER") == "" || os.Getenv("TEST_ASSET_ETCD") == "":
		// The admission tests skip, or fail under CI (newNamespace).
		noControlPlane = "needs the control plane (TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD): run the tests with `make test`"
		return m.Run()
	}
	logf.SetLogger(logr.Discard())

	root, err := reporoot.Find()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := echov1alpha1.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// newNamespace creates a namespace of its own for a test. Every admission
// test starts here: without a control plane it skips, in -short mode or
// when the binaries are missing, except under CI, which must run every
// test and fails it.
func newNamespace(t *testing.T) string {
	t.Helper()
	if k8sClient == nil {
		if os.Getenv("CI") != "" && !testing.Short() {
			t.Fatal(noControlPlane)
		}
		t.Skip(noControlPlane)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "echo-test-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}
