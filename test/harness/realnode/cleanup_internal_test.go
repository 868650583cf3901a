package realnode

import (
	"os"
	"path/filepath"
	"testing"
)

// TestIsNodeRoot: only a directory laid out as a node's root is cleaned
// when the machine's lock file names it.
func TestIsNodeRoot(t *testing.T) {
	node := t.TempDir()
	for _, d := range []string{"containerd", "kubelet", "logs"} {
		if err := os.Mkdir(filepath.Join(node, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for root, want := range map[string]bool{node: true, t.TempDir(): false, "/": false, "relative/node": false,
		filepath.Join(node, "missing"): false} {
		if got := isNodeRoot(root); got != want {
			t.Errorf("isNodeRoot(%q) = %t, want %t", root, got, want)
		}
	}
}
