package makerun

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/localcluster"
)

// suiteName names the suite in its messages.
const suiteName = "make run test"

var repoRoot, workDir string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(localcluster.RunSuite(m, suiteName, skipReason(), setUp, tearDown))
}

// skipReason says why `make run` cannot start a real node here, or is "".
func skipReason() string {
	return localcluster.SkipReason(testing.Short(), func() error {
		if os.Getenv("KUBECTL") == "" {
			return errors.New("KUBECTL is not set: run the test through make (make test), which builds kubectl and sets it")
		}
		return nil
	})
}

func setUp() (err error) {
	repoRoot, workDir, err = localcluster.SuiteDirs("echo-makerun-")
	return err
}

// tearDown stops a run the test left going (a failure halfway) the way
// Ctrl-C does, and keeps the logs after a failure.
func tearDown(failed bool) {
	if current != nil {
		if err := current.interrupt(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping make run:", err)
		}
	}
	localcluster.KeepLogsOnFailure(suiteName, workDir, failed)
}
