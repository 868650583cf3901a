package localcluster

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// RunSuite is the TestMain of a suite that starts a local cluster: it
// skips the suite with a line that says why when skip is not "", else
// runs setUp, the tests, and tearDown, which learns whether anything
// failed. name names the suite in its messages. It returns the exit code.
// Interrupted (SIGINT, SIGTERM), it tears down what it started and exits
// with 130, rather than leave the cluster's processes running.
func RunSuite(m *testing.M, name, skip string, setUp func() error, tearDown func(failed bool)) (code int) {
	if skip != "" {
		fmt.Printf("skipping the %s: %s\n", name, skip)
		return 0
	}
	var once sync.Once
	release := whenInterrupted(func() {
		fmt.Fprintf(os.Stderr, "the %s was interrupted: stopping its cluster\n", name)
		once.Do(func() { tearDown(true) })
	}, os.Exit)
	defer func() {
		release()
		once.Do(func() { tearDown(code != 0) })
	}()
	if err := setUp(); err != nil {
		fmt.Fprintf(os.Stderr, "setting up the %s: %v\n", name, err)
		return 1
	}
	return m.Run()
}

// whenInterrupted runs cleanup, then exit(130), when the process receives
// SIGINT or SIGTERM before release is called.
func whenInterrupted(cleanup func(), exit func(int)) (release func()) {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-signals:
			cleanup()
			exit(130)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
	}
}

// KeepLogsOnFailure removes a suite's work directory, or, after a failure,
// keeps it, with the logs of the cluster, the node and the builds, and
// says where.
func KeepLogsOnFailure(name, workDir string, failed bool) {
	switch {
	case workDir == "":
	case failed:
		fmt.Fprintf(os.Stderr, "the %s's logs are in %s\n", name, workDir)
	default:
		_ = os.RemoveAll(workDir)
	}
}

// Binaries are what a local cluster runs: the real node's and the control
// plane's (with the kubectl of its version).
type Binaries struct {
	Node    realnode.Binaries
	Cluster simcluster.Binaries
}

// LocateBinaries finds both, as `make test` passes them.
func LocateBinaries(repoRoot string) (Binaries, error) {
	node, err := realnode.LocateBinaries()
	if err != nil {
		return Binaries{}, err
	}
	cluster, err := simcluster.LocateBinaries(repoRoot)
	if err != nil {
		return Binaries{}, err
	}
	return Binaries{Node: node, Cluster: cluster}, nil
}

// SuiteDirs are a suite's repository root and a new work directory of its
// own, named after prefix, which KeepLogsOnFailure removes or keeps.
func SuiteDirs(prefix string) (repoRoot, workDir string, err error) {
	if repoRoot, err = reporoot.Find(); err != nil {
		return "", "", err
	}
	workDir, err = os.MkdirTemp("", prefix)
	return repoRoot, workDir, err
}
