package clusteruser

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Kubectl runs a kubectl binary against one cluster.
type Kubectl struct {
	// Bin is kubectl's path; Kubeconfig the cluster's kubeconfig.
	Bin, Kubeconfig string
	// Env is added to kubectl's environment (or the environment of Command's).
	Env []string
	// Dir is the directory it runs in, which relative paths start from;
	// empty means the test's.
	Dir string
}

// commandTimeout bounds a kubectl run.
const commandTimeout = 5 * time.Minute

// Run runs kubectl with args and returns its combined output.
func (k Kubectl) Run(args ...string) (string, error) { return k.RunIn("", args...) }

// RunIn runs kubectl with stdin on its input.
func (k Kubectl) RunIn(stdin string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return k.Command(ctx, stdin, k.Bin, args...)
}

// Command runs name (kubectl, or another client such as operator-sdk) with
// the cluster's kubeconfig and stdin, and returns its combined output.
func (k Kubectl) Command(ctx context.Context, stdin, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+k.Kubeconfig), k.Env...)
	cmd.Stdin, cmd.Dir = strings.NewReader(stdin), k.Dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}
