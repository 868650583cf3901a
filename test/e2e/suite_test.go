//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/simcluster"
	"github.com/echo-operator/echo-operator/test/harness/simsuite"
	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

const (
	echoImage         = "registry.example.test/echo-server:e2e"
	operatorNamespace = "echo-operator-system"
	// storageHost is the loopback address of the S3 servers whose buckets
	// the live API lists, and the only address the manager's egress policy
	// allows besides the public internet (--storage-egress-allow): every
	// other loopback address, localhost among them, stays denied, as in a
	// cluster.
	storageHost = "127.0.0.3"
	// sharedStorageEndpoint is the one endpoint the operator's
	// administrator allows every token and SSE-C key to be sent to
	// ($STORAGE_ENDPOINTS).
	sharedStorageEndpoint = "https://s3.shared.example.test"
)

var (
	repoRoot   string
	kubectlBin string
	cluster    *simcluster.Cluster
	cfg        *rest.Config
	k8sClient  client.Client
	clientset  *kubernetes.Clientset
	op         *operatorProcess
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the end-to-end tests in -short mode")
		os.Exit(0)
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	env, err := simsuite.Start("e2e", operatorNamespace, simcluster.Options{
		Nodes:               3,
		DefaultStorageClass: true,
		// TestMoverJobPodFailures, TestKubectlRunsTheDocumentedCommands,
		// TestEncryptedBackups, TestHostileTenantPlantedBackupJob... end
		// the Job pods of these namespaces themselves.
		HeldJobPodNamespaces: []string{heldJobPodNamespace, kubectlDocsNamespace, alertsNamespace, forgedReportNamespace, encryptionNamespace, identityNamespace,
			plantedJobNamespace},
	})
	if err != nil {
		return fail(err)
	}
	defer env.Stop()
	repoRoot, kubectlBin, cluster = env.RepoRoot, env.Binaries.Kubectl, env.Cluster
	cfg, k8sClient, clientset = env.Config, env.Client, env.Clientset

	metricsAddr, err := freeLoopbackAddr()
	if err != nil {
		return fail(err)
	}
	// The metrics endpoint serves a certificate of a CA the tests trust, as
	// one cert-manager issues would be served (--metrics-cert-dir).
	metricsCertDir := filepath.Join(env.WorkDir, "metrics-certs")
	metricsCA, err := testcerts.Write(metricsCertDir, "tls.crt", "tls.key")
	if err != nil {
		return fail(err)
	}
	// The live API serves a certificate for its Service's name, which the
	// aggregator checks against the APIService's caBundle.
	liveAPIAddr, err := freeLoopbackAddr()
	if err != nil {
		return fail(err)
	}
	liveAPICertDir := filepath.Join(env.WorkDir, "live-api-certs")
	liveAPICA, err := testcerts.Write(liveAPICertDir, "tls.crt", "tls.key", liveAPIService+"."+operatorNamespace+".svc")
	if err != nil {
		return fail(err)
	}
	op = &operatorProcess{binary: env.Manager, kubeconfig: cluster.KubeconfigPath(), logPath: filepath.Join(env.WorkDir, "manager.log"),
		metricsAddr: metricsAddr, metricsCertDir: metricsCertDir, metricsCA: metricsCA,
		liveAPIAddr: liveAPIAddr, liveAPICertDir: liveAPICertDir, liveAPICA: liveAPICA}
	if err := op.start(); err != nil {
		return fail(err)
	}
	code := m.Run()
	if err := op.stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the operator:", err)
		code = 1
	}
	for _, exit := range op.unexpectedExits() {
		fmt.Fprintln(os.Stderr, exit)
	}
	if code != 0 {
		simsuite.DumpLog(op.logPath, 20000)
		simsuite.DumpLog(filepath.Join(env.WorkDir, "cluster", "kube-controller-manager.log"), 20000)
	}
	return code
}

// freeLoopbackAddr returns an address on 127.0.0.1 that was free a moment
// ago.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}
