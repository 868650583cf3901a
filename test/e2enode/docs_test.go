package e2enode

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
)

// docCommand is a kubectl command as README.md or docs/ shows it.
type docCommand = clusteruser.DocCommand

// documented declares a command of the documentation that a test runs, as
// written. test/docs reads every call of it in this package, whose
// arguments must be string literals, and fails when the documentation
// shows a kubectl command that no test runs.
func documented(args ...string) docCommand { return args }

// docsUser runs documented commands as a user of namespace ns does, the
// kubectl plugin kubectl-echo of pluginDir on the PATH.
type docsUser struct {
	ns, pluginDir string
}

// run runs c in the user's namespace and fails the test on error. A
// plugin reads the connection flags after its own arguments.
func (u docsUser) run(t *testing.T, c docCommand) string {
	t.Helper()
	out, err := clusteruser.Kubectl{Bin: kubectlBin, Kubeconfig: cluster.KubeconfigPath(),
		Env: []string{"PATH=" + u.pluginDir + string(os.PathListSeparator) + os.Getenv("PATH")}}.
		RunIn("", append(append([]string{}, c...), "-n", u.ns)...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(c, " "), err, out)
	}
	return out
}

var fencedBlock = regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")

// docManifest is the first YAML block of the page doc (relative to docs/)
// that holds every one of marks, with the replacements of r (old, new,
// ...) made; each old must be in the block.
func docManifest(t *testing.T, doc string, marks []string, r ...string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range fencedBlock.FindAllStringSubmatch(string(raw), -1) {
		block, all := m[2], m[1] == "yaml"
		for _, mark := range marks {
			all = all && strings.Contains(block, mark)
		}
		if !all {
			continue
		}
		for i := 0; i < len(r); i += 2 {
			if !strings.Contains(block, r[i]) {
				t.Fatalf("docs/%s: the block with %q has no %q to replace:\n%s", doc, marks, r[i], block)
			}
		}
		return strings.NewReplacer(r...).Replace(block)
	}
	t.Fatalf("docs/%s has no yaml block with %q", doc, marks)
	return ""
}
