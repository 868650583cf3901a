//go:build linux

// Package failover runs the manager binary, built from this tree, against a
// simulated cluster whose control plane is restarted under it, and as two
// replicas with leader election whose leader is SIGKILLed: every Echo must
// converge all the same.
//
// The default run is small enough for `go test ./...`; CHAOS_FULL=1 rolls
// out 300 Echos instead of 30. BenchmarkLeaderTakeover measures the
// takeover time (`make bench-failover`).
package failover

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/echo-operator/echo-operator/internal/operator"
	"github.com/echo-operator/echo-operator/internal/simcluster"
	"github.com/echo-operator/echo-operator/internal/testutil/managerbin"
)

const (
	echoImage         = "registry.example.test/echo-server:failover"
	operatorNamespace = "echo-operator-system"
	// leaseName is the manager's leader election Lease (LeaderElectionID
	// in internal/operator).
	leaseName = "echo-operator.echo.dev"

	interval = 200 * time.Millisecond
)

var (
	repoRoot    string
	workDir     string
	managerPath string
	cluster     *simcluster.Cluster
	k8sClient   client.Client
	clientset   *kubernetes.Clientset

	// fullRun is CHAOS_FULL=1: the large rollout.
	fullRun = os.Getenv("CHAOS_FULL") == "1"
)

// rolloutSize is the number of Echos of a faulted rollout.
func rolloutSize() int {
	if fullRun {
		return 300
	}
	return 30
}

// rolloutTimeout bounds a faulted rollout's convergence.
func rolloutTimeout() time.Duration {
	if fullRun {
		return 10 * time.Minute
	}
	return 3 * time.Minute
}

func TestMain(m *testing.M) {
	flag.Parse()
	// envtest's CRD installer logs through controller-runtime.
	ctrllog.SetLogger(logr.Discard())
	if testing.Short() {
		fmt.Println("skipping the failover tests in -short mode")
		os.Exit(0)
	}
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	var err error
	if repoRoot, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		return fail(err)
	}
	bins, err := simcluster.LocateBinaries(repoRoot)
	if err != nil {
		return fail(err)
	}
	if workDir, err = os.MkdirTemp("", "echo-failover-"); err != nil {
		return fail(err)
	}
	defer func() { _ = os.RemoveAll(workDir) }()

	if managerPath, err = managerbin.Build(context.Background(), repoRoot, workDir); err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err = simcluster.Start(ctx, simcluster.Options{
		Binaries:          bins,
		CRDDirectoryPaths: []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		Nodes:             1,
		WorkDir:           filepath.Join(workDir, "cluster"),
	})
	if err != nil {
		return fail(fmt.Errorf("starting the simulated cluster: %w", err))
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the simulated cluster:", err)
		}
	}()
	cfg := cluster.Config()
	if k8sClient, err = client.New(cfg, client.Options{Scheme: operator.NewScheme()}); err != nil {
		return fail(err)
	}
	clientset = kubernetes.NewForConfigOrDie(cfg)
	if err := createNamespace(context.Background(), operatorNamespace); err != nil {
		return fail(err)
	}

	code := m.Run()
	if code != 0 {
		for _, comp := range []simcluster.Component{simcluster.ComponentAPIServer, simcluster.ComponentEtcd} {
			dumpLog(filepath.Join(workDir, "cluster", string(comp)+".log"), 5000)
		}
	}
	return code
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// dumpLog prints the last tail bytes of a log file to stderr.
func dumpLog(path string, tail int) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return
	}
	if len(raw) > tail {
		raw = raw[len(raw)-tail:]
	}
	fmt.Fprintf(os.Stderr, "---- last lines of %s ----\n%s\n", path, raw)
}
