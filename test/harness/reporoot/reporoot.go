package reporoot

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ModulePath is the path of the repository's Go module.
const ModulePath = "github.com/echo-operator/echo-operator"

// Find walks up from the working directory to the directory holding the
// go.mod of ModulePath.
func Find() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module "+ModulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("run from the echo-operator repository: no go.mod of %s at or above the working directory", ModulePath)
		}
		dir = parent
	}
}

// Must returns the repository's root, or fails the test.
func Must(tb testing.TB) string {
	tb.Helper()
	root, err := Find()
	if err != nil {
		tb.Fatal(err)
	}
	return root
}
