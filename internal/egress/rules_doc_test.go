package egress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestRulesAreDocumented keeps the security model's list of denied ranges
// in step with the code.
func TestRulesAreDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(reporoot.Must(t), "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Rules() {
		if !strings.Contains(string(doc), "`"+r.Prefix.String()+"`") {
			t.Errorf("docs/architecture.md does not list %s `%s`", r.Name, r.Prefix)
		}
	}
}
