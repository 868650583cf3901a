package localcluster

import (
	"fmt"
	"os"
	"testing"
)

// RunSuite is the TestMain of a suite that starts a local cluster: it
// skips the suite with a line that says why when skip is not "", else
// runs setUp, the tests, and tearDown, which learns whether anything
// failed. name names the suite in its messages. It returns the exit code.
func RunSuite(m *testing.M, name, skip string, setUp func() error, tearDown func(failed bool)) (code int) {
	if skip != "" {
		fmt.Printf("skipping the %s: %s\n", name, skip)
		return 0
	}
	defer func() { tearDown(code != 0) }()
	if err := setUp(); err != nil {
		fmt.Fprintf(os.Stderr, "setting up the %s: %v\n", name, err)
		return 1
	}
	return m.Run()
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
