package e2enode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// deployOperator runs `make deploy` as docs/install.md shows it, with the
// images built here and the suite's kubectl, then waits for the
// operator's Deployment to roll out.
// It runs in a scratch tree that shares the repository's Makefile, scripts
// and tools but holds a copy of config/, which `make deploy` edits.
func deployOperator() error {
	tree, err := scratchTree()
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tree) }()
	mk := exec.Command("make", "--no-print-directory", "deploy", "IMG="+operatorImage, "ECHO_IMG="+echoServerImage, "KUBECTL="+kubectlBin)
	mk.Dir, mk.Env = tree, append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath())
	if out, err := mk.CombinedOutput(); err != nil {
		return fmt.Errorf("make deploy: %w\n%s", err, out)
	}
	if out, err := kubectlErr("rollout", "status", "-n", operatorNamespace, "deployment/echo-operator-controller-manager",
		"--timeout=180s"); err != nil {
		return fmt.Errorf("the operator did not roll out: %w\n%s\n%s", err, out, describePods(operatorNamespace))
	}
	return nil
}

// scratchTree links the repository's files `make deploy` reads into a
// temporary directory, but for config/, which it copies.
func scratchTree() (string, error) {
	tree, err := os.MkdirTemp("", "echo-e2enode-deploy-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"Makefile", "hack", "bin", "go.mod", "go.sum"} {
		if err := os.Symlink(filepath.Join(repoRoot, name), filepath.Join(tree, name)); err != nil {
			return "", err
		}
	}
	cp := exec.Command("cp", "-r", filepath.Join(repoRoot, "config"), tree)
	if out, err := cp.CombinedOutput(); err != nil {
		return "", fmt.Errorf("copying config/: %w: %s", err, strings.TrimSpace(string(out)))
	}
	return tree, nil
}
