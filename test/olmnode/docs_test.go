package olmnode

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
)

// installDoc is the page whose commands and manifests the tests follow.
const installDoc = "docs/install.md"

// docCommand is a kubectl command as README.md or docs/ shows it.
type docCommand = clusteruser.DocCommand

// documented declares a command of the documentation that a test runs, as
// written. test/docs reads every call of it in this package, whose
// arguments must be string literals, and fails when the documentation
// shows a kubectl command that no test runs.
func documented(args ...string) docCommand { return args }

// runDocumented runs c with the suite's kubectl and fails the test on
// error.
func runDocumented(t *testing.T, c docCommand) {
	t.Helper()
	run(t, c...)
}

// installDocText is docs/install.md.
func installDocText(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, installDoc))
	must(t, err)
	return string(raw)
}

var fencedBlock = regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")

// docBlock is the first code block of docs/install.md tagged lang that
// holds every one of marks.
func docBlock(t *testing.T, lang string, marks ...string) string {
	t.Helper()
	for _, m := range fencedBlock.FindAllStringSubmatch(installDocText(t), -1) {
		block, all := m[2], m[1] == lang
		for _, mark := range marks {
			all = all && strings.Contains(block, mark)
		}
		if all {
			return block
		}
	}
	t.Fatalf("%s has no %s block with %q", installDoc, lang, marks)
	return ""
}

// docManifest is the first YAML block of docs/install.md that holds every
// one of marks, with the replacements of r (old, new, ...) made.
func docManifest(t *testing.T, marks []string, r ...string) string {
	t.Helper()
	block := docBlock(t, "yaml", marks...)
	for i := 0; i < len(r); i += 2 {
		if !strings.Contains(block, r[i]) {
			t.Fatalf("%s: the block with %q has no %q to replace:\n%s", installDoc, marks, r[i], block)
		}
	}
	return strings.NewReplacer(r...).Replace(block)
}
