package controlplane

import (
	"os"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Start starts the control plane, stopped when the test ends, and returns
// the administrator's configuration. Without TEST_ASSET_KUBE_APISERVER and
// TEST_ASSET_ETCD, or in -short mode, it skips the test; under CI, where
// every test must run, a missing binary fails it.
func Start(t testing.TB) *rest.Config {
	t.Helper()
	missing := os.Getenv("TEST_ASSET_KUBE_APISERVER") == "" || os.Getenv("TEST_ASSET_ETCD") == ""
	switch {
	case missing && os.Getenv("CI") != "":
		t.Fatal("needs the control plane (TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD), which `make test` sets")
	case missing || testing.Short():
		t.Skip("needs the control plane (TEST_ASSET_KUBE_APISERVER, TEST_ASSET_ETCD): run with `make test`")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}
