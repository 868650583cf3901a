//go:build linux

package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/echo-operator/echo-operator/test/harness/moverrunner"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
	"github.com/echo-operator/echo-operator/test/harness/simsuite"
)

const (
	echoImage         = "registry.example.test/echo-server:chaos"
	operatorNamespace = "echo-operator-system"
	// namespacePrefix starts the name of every namespace of the suite;
	// the mover runner handles the Jobs of those only.
	namespacePrefix = "chaos-"
)

var (
	repoRoot      string
	managerBinary string
	workDir       string
	cluster       *simcluster.Cluster
	cfg           *rest.Config
	k8sClient     client.Client
	clientset     *kubernetes.Clientset
	movers        = &moverLog{failures: map[string][]string{}}
	claimsRoot    string
	fullRun       = os.Getenv("CHAOS_FULL") == "1"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the chaos tests in -short mode")
		os.Exit(0)
	}
	ctrllog.SetLogger(logr.Discard())
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	env, err := simsuite.Start("chaos", operatorNamespace, simcluster.Options{Nodes: 3, DefaultStorageClass: true})
	if err != nil {
		return fail(err)
	}
	defer env.Stop()
	repoRoot, managerBinary, workDir, cluster = env.RepoRoot, env.Manager, env.WorkDir, env.Cluster
	cfg, k8sClient, clientset = env.Config, env.Client, env.Clientset
	if err := startMoverRunner(); err != nil {
		return fail(err)
	}
	code := m.Run()
	printSummary()
	return code
}

// startMoverRunner plays the kubelet for the mover Jobs of the suite's
// namespaces until the process ends. Each claim is a directory of its
// namespace under claimsRoot.
func startMoverRunner() error {
	claimsRoot = filepath.Join(workDir, "claims")
	runner := &moverrunner.Runner{
		Binary:   managerBinary,
		Client:   k8sClient,
		ClaimDir: claimDir,
		WorkDir:  filepath.Join(workDir, "movers"),
	}
	inScope := func(ns string) bool { return strings.HasPrefix(ns, namespacePrefix) }
	return runner.Watch(context.Background(), clientset, inScope, movers.record)
}

// claimDir is the local directory of a claim.
func claimDir(namespace, claim string) string { return filepath.Join(claimsRoot, namespace, claim) }

// moverLog keeps the mover runs that failed, by namespace.
type moverLog struct {
	mu       sync.Mutex
	failures map[string][]string
	runs     int
}

func (l *moverLog) record(run moverrunner.Run) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs++
	switch {
	case errors.Is(run.Err, moverrunner.ErrPodGone) && run.Result.Succeeded():
		// Its Job was deleted while the mover ran: the operator no longer
		// needed the result (the convergence checks say whether it did).
	case run.Err != nil:
		l.failures[run.Pod.Namespace] = append(l.failures[run.Pod.Namespace], fmt.Sprintf("%s: %v", run.Pod.Name, run.Err))
	case !run.Result.Succeeded():
		l.failures[run.Pod.Namespace] = append(l.failures[run.Pod.Namespace],
			fmt.Sprintf("%s: exit %d: %s: %s", run.Pod.Name, run.Result.ExitCode, run.Result.Message, run.Result.Output))
	}
}

// failuresIn lists the failed mover runs of a namespace.
func (l *moverLog) failuresIn(namespace string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.failures[namespace]...)
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}
