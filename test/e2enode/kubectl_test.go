package e2enode

import (
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
)

// kubectl runs the cluster's kubectl against the suite's cluster, as a
// user types it, and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectlErr(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlApply runs `kubectl apply -n ns -f -` with manifest on its input.
func kubectlApply(t *testing.T, ns, manifest string) {
	t.Helper()
	if out, err := kubectlIn(manifest, "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// kubectlErr runs kubectl and returns its combined output.
func kubectlErr(args ...string) (string, error) { return kubectlIn("", args...) }

// kubectlIn runs kubectl with stdin on its input.
func kubectlIn(stdin string, args ...string) (string, error) {
	return clusteruser.Kubectl{Bin: kubectlBin, Kubeconfig: cluster.KubeconfigPath()}.RunIn(stdin, args...)
}
