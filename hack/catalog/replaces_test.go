package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestBundleRequiresReplacesFromTheSecondRelease runs the Makefile's
// verify-replaces, which `make bundle` runs first, against a template of
// two releases: the first release needs no REPLACES, any later one needs
// one of the template's releases, and the message says what to set.
func TestBundleRequiresReplacesFromTheSecondRelease(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	root := reporoot.Must(t)
	template := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(template, []byte(`schema: olm.template.basic
entries:
- schema: olm.channel
  package: echo-operator
  name: alpha
  entries:
  - {name: echo-operator.v0.1.0, skipRange: <0.1.0}
  - name: echo-operator.v0.2.0
    replaces: echo-operator.v0.1.0
- {schema: olm.bundle, image: quay.io/echo-operator/echo-operator-bundle:v0.1.0}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, version, replaces string
		// fails is a part of the message of a failure; empty: it passes.
		fails string
	}{
		{name: "first release", version: "0.1.0"},
		{name: "second release", version: "0.2.0", replaces: "0.1.0"},
		{name: "third, not yet in the template", version: "0.3.0", replaces: "0.2.0"},
		{name: "second release without REPLACES", version: "0.2.0",
			fails: "VERSION 0.2.0 is not the first release (0.1.0 in " + template + "): set REPLACES to the release it upgrades from, e.g. make bundle VERSION=0.2.0 REPLACES=0.1.0."},
		{name: "third release without REPLACES", version: "0.3.0", fails: "e.g. make bundle VERSION=0.3.0 REPLACES=0.2.0."},
		{name: "REPLACES not a release", version: "0.2.0", replaces: "0.1.5",
			fails: "REPLACES=0.1.5 is not an earlier release in " + template + " (it lists 0.1.0 0.2.0)"},
		{name: "REPLACES itself", version: "0.2.0", replaces: "0.2.0", fails: "REPLACES=0.2.0 is not an earlier release"},
		{name: "first release replacing", version: "0.1.0", replaces: "0.1.0", fails: "REPLACES=0.1.0 is not an earlier release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("make", "-s", "--no-print-directory", "-C", root, "verify-replaces",
				"CATALOG_TEMPLATE="+template, "VERSION="+tc.version, "REPLACES="+tc.replaces)
			out, err := cmd.CombinedOutput()
			switch {
			case tc.fails == "" && err != nil:
				t.Errorf("VERSION=%s REPLACES=%s failed: %v\n%s", tc.version, tc.replaces, err, out)
			case tc.fails != "" && err == nil:
				t.Errorf("VERSION=%s REPLACES=%s passed, want a failure saying %q", tc.version, tc.replaces, tc.fails)
			case tc.fails != "" && !strings.Contains(string(out), tc.fails):
				t.Errorf("VERSION=%s REPLACES=%s says %q, want %q", tc.version, tc.replaces, out, tc.fails)
			}
		})
	}
}
