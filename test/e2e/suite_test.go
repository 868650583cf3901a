//go:build linux

// Package e2e runs the operator as users do: the real manager binary, built
// from this tree, against a simulated cluster (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, KWOK nodes), driven only through
// the Kubernetes API.
package e2e

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/simcluster"
	"github.com/echo-operator/echo-operator/internal/testutil/simsuite"
	"github.com/echo-operator/echo-operator/internal/testutil/testcerts"
)

const (
	echoImage         = "registry.example.test/echo-server:e2e"
	operatorNamespace = "echo-operator-system"
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
		// TestMoverJobPodFailures and TestKubectlRunsTheDocumentedCommands
		// end the Job pods of these namespaces themselves.
		HeldJobPodNamespaces: []string{heldJobPodNamespace, kubectlDocsNamespace, alertsNamespace},
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

// operatorProcess is the manager binary, run as a user would run it out of
// cluster: from the project's directory (watches.yaml, helm-charts/) with a
// kubeconfig.
type operatorProcess struct {
	binary, kubeconfig, logPath string
	// metricsAddr is where the manager serves its metrics: HTTPS,
	// authenticated and authorized by the API server, as deployed, with
	// the certificate of metricsCertDir, which metricsCA issued.
	metricsAddr, metricsCertDir, metricsCA string
	// liveAPIAddr is where the manager serves the live API, with the
	// certificate of liveAPICertDir, which liveAPICA issued.
	liveAPIAddr, liveAPICertDir, liveAPICA string
	cmd                                    *exec.Cmd
	log                                    *os.File
}

func (p *operatorProcess) start() error {
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.binary,
		"--leader-elect",
		"--leader-election-namespace="+operatorNamespace,
		// Short leases, so a killed operator's successor takes over quickly.
		"--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
		"--health-probe-bind-address=0",
		"--metrics-bind-address="+p.metricsAddr,
		"--metrics-cert-dir="+p.metricsCertDir,
		"--live-api-bind-address="+p.liveAPIAddr,
		"--live-api-cert-dir="+p.liveAPICertDir,
	)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig, "RELATED_IMAGE_ECHO="+echoImage, "WATCH_NAMESPACE=")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting the operator: %w", err)
	}
	_, _ = fmt.Fprintf(log, "==== operator started, pid %d ====\n", cmd.Process.Pid)
	p.cmd, p.log = cmd, log
	return nil
}

// kill ends the operator at once, as an OOM kill or a node loss would.
func (p *operatorProcess) kill() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	_ = p.log.Close()
}

// stop asks the operator to shut down gracefully and waits for it.
func (p *operatorProcess) stop() error {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	defer func() { _ = p.log.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(45 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("the operator did not stop within 45s of SIGTERM")
	}
}
