//go:build linux

package failover

import (
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

	"github.com/echo-operator/echo-operator/test/harness/simcluster"
	"github.com/echo-operator/echo-operator/test/harness/simsuite"
)

const (
	echoImage         = "registry.example.test/echo-server:failover"
	operatorNamespace = "echo-operator-system"
	// leaseName is the manager's leader election Lease (LeaderElectionID
	// in cmd/manager/app).
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

// skipUnlessFullRun skips a test that runs only with CHAOS_FULL=1.
func skipUnlessFullRun(t *testing.T) {
	t.Helper()
	if !fullRun {
		t.Skip("runs with CHAOS_FULL=1 (make test-chaos)")
	}
}

// rolloutSize is the number of Echos of a faulted rollout.
func rolloutSize() int {
	if fullRun {
		return 300
	}
	return 30
}

// rolloutTimeout bounds a faulted rollout's convergence. The Helm
// reconciler's work queue (the library's, which cannot be tuned) backs an
// Echo off exponentially through an outage, up to minutes on a loaded
// machine, so the bound is generous.
func rolloutTimeout() time.Duration {
	if fullRun {
		return 10 * time.Minute
	}
	return 6 * time.Minute
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
	env, err := simsuite.Start("failover", operatorNamespace, simcluster.Options{Nodes: 1})
	if err != nil {
		return fail(err)
	}
	defer env.Stop()
	repoRoot, workDir, managerPath, cluster = env.RepoRoot, env.WorkDir, env.Manager, env.Cluster
	k8sClient, clientset = env.Client, env.Clientset

	code := m.Run()
	if code != 0 {
		for _, comp := range []simcluster.Component{simcluster.ComponentAPIServer, simcluster.ComponentEtcd} {
			simsuite.DumpLog(filepath.Join(env.WorkDir, "cluster", string(comp)+".log"), 5000)
		}
	}
	return code
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}
