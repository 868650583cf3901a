//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

const (
	// benchNamespace holds every Echo and what it renders.
	benchNamespace = "bench"
	// operatorNamespace holds the operator's leader election Lease.
	operatorNamespace = "echo-operator-system"

	// podsPerNode is the fake nodes' pod capacity (test/harness/simcluster);
	// nodes are filled to at most nodeFill of it, plus spare nodes.
	podsPerNode = 1000
	nodeFill    = 900
	spareNodes  = 2

	// Client limits of the benchmark's own clients: high enough never to
	// be the bottleneck.
	clientQPS   = 2000
	clientBurst = 4000
	// Client limits of kube-controller-manager and kube-scheduler, raised
	// from simcluster's defaults so that they keep up with N at once.
	controllerManagerQPS   = 1000
	controllerManagerBurst = 2000
)

// benchCluster is a simulated cluster with the benchmark's clients.
type benchCluster struct {
	*simcluster.Cluster
	config    *rest.Config
	clientset kubernetes.Interface
	dynamic   dynamic.Interface
}

// nodesFor is the number of fake nodes for n single-replica Echos.
func nodesFor(n int) int { return n/nodeFill + spareNodes }

// startCluster starts a fresh cluster with echo-operator's CRDs and those of
// the stock run in crdPaths, sized for n pods, and creates the namespaces.
func startCluster(ctx context.Context, bins simcluster.Binaries, crdPaths []string, n int, workDir string) (*benchCluster, error) {
	c, err := simcluster.Start(ctx, simcluster.Options{
		Binaries:               bins,
		CRDDirectoryPaths:      crdPaths,
		Nodes:                  nodesFor(n),
		ControllerManagerQPS:   controllerManagerQPS,
		ControllerManagerBurst: controllerManagerBurst,
		WorkDir:                workDir,
	})
	if err != nil {
		return nil, fmt.Errorf("starting the simulated cluster: %w", err)
	}
	bc := &benchCluster{Cluster: c, config: c.Config()}
	if err := bc.connect(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return bc, nil
}

// connect builds the clients and creates the namespaces.
func (c *benchCluster) connect(ctx context.Context) error {
	c.config.QPS, c.config.Burst = clientQPS, clientBurst
	var err error
	if c.clientset, err = kubernetes.NewForConfig(c.config); err != nil {
		return fmt.Errorf("building a clientset: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(c.config); err != nil {
		return fmt.Errorf("building a dynamic client: %w", err)
	}
	for _, ns := range []string{benchNamespace, operatorNamespace} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := c.clientset.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	return nil
}

// apiserverRequests scrapes kube-apiserver's request counters.
func (c *benchCluster) apiserverRequests(ctx context.Context) (requestCounts, error) {
	raw, err := c.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scraping kube-apiserver's metrics: %w", err)
	}
	mfs, err := parseMetrics(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return apiserverRequests(mfs), nil
}

// stockCRD is the CustomResourceDefinition of the stock helm-operator's
// Echo: no schema, so that its spec can carry the chart values as they are.
const stockCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: echoes.` + stockGroup + `
spec:
  group: ` + stockGroup + `
  scope: Namespaced
  names:
    kind: Echo
    listKind: EchoList
    plural: echoes
    singular: echo
  versions:
    - name: ` + stockVersion + `
      served: true
      storage: true
      subresources:
        status: {}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              x-kubernetes-preserve-unknown-fields: true
            status:
              type: object
              x-kubernetes-preserve-unknown-fields: true
`

// writeStockCRD writes stockCRD into dir and returns its path.
func writeStockCRD(dir string) (string, error) {
	p := filepath.Join(dir, "stock-echo-crd.yaml")
	if err := os.WriteFile(p, []byte(stockCRD), 0o600); err != nil {
		return "", fmt.Errorf("writing the stock CRD: %w", err)
	}
	return p, nil
}
