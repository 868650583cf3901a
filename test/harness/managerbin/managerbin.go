package managerbin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// EnvBinary names the environment variable that points at a manager
// binary built beforehand. `make test` builds one for every test package
// that runs the manager: built by each package, two at a time, it would be
// compiled and linked again and again.
const EnvBinary = "ECHO_MANAGER_BINARY"

// Build compiles ./cmd/manager of the module at repoRoot into dir and
// returns the binary's path, or returns the binary EnvBinary names. The
// compiler's output goes to stderr.
func Build(ctx context.Context, repoRoot, dir string) (string, error) {
	if prebuilt := os.Getenv(EnvBinary); prebuilt != "" {
		if _, err := os.Stat(prebuilt); err != nil {
			return "", fmt.Errorf("the manager binary %s names: %w", EnvBinary, err)
		}
		return prebuilt, nil
	}
	out := filepath.Join(dir, "manager")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/manager")
	cmd.Dir, cmd.Stdout, cmd.Stderr = repoRoot, os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the manager: %w", err)
	}
	return out, nil
}
