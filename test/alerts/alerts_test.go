package alerts_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/toolbin"
)

// The files under test, relative to the repository root.
const (
	ruleFile     = "config/prometheus/prometheusrule.yaml"
	unitTestFile = "config/prometheus/tests/alerts_test.yaml"
	runbookDir   = "docs/runbooks"
	// runbookIndex lists the runbooks; it is the runbook of no alert.
	runbookIndex = runbookDir + "/README.md"

	// extractedRules is the name the unit test file gives the rule file
	// in its rule_files: the rule groups are written under that name
	// beside a copy of it.
	extractedRules = "echo-operator-alerts.rules.yaml"

	// runbookURLBase followed by <alert>.md is the runbook_url of an alert.
	runbookURLBase = "https://github.com/echo-operator/echo-operator/blob/main/" + runbookDir + "/"

	// envPromtool names the environment variable holding promtool's path.
	envPromtool = "PROMTOOL"
)

// severities are the values an alert's severity label may take.
var severities = []string{"warning", "critical"}

// requiredAnnotations are the annotations every alert carries.
var requiredAnnotations = []string{"summary", "description", "runbook_url"}

// TestRulesPassPromtoolCheck runs `promtool check rules` with every lint
// on the rule groups of the PrometheusRule.
func TestRulesPassPromtoolCheck(t *testing.T) {
	promtool := needPromtool(t)
	dir := t.TempDir()
	writeRules(t, loadRule(t, reporoot.Must(t)), filepath.Join(dir, extractedRules))

	out, err := run(dir, promtool, "check", "rules", "--lint=all", "--lint-fatal", extractedRules)
	if err != nil {
		t.Fatalf("promtool check rules %s (the rule groups of %s): %v\n%s", extractedRules, ruleFile, err, out)
	}
	t.Logf("promtool check rules:\n%s", out)
}

// TestAlertsPassTheirUnitTests runs `promtool test rules` on the unit tests
// of the alerts, against the rule groups of the PrometheusRule.
func TestAlertsPassTheirUnitTests(t *testing.T) {
	promtool := needPromtool(t)
	root := reporoot.Must(t)
	dir := t.TempDir()
	writeRules(t, loadRule(t, root), filepath.Join(dir, extractedRules))
	tests, err := os.ReadFile(filepath.Join(root, unitTestFile))
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, filepath.Base(unitTestFile))
	if err := os.WriteFile(copied, tests, 0o600); err != nil {
		t.Fatal(err)
	}

	out, err := run(dir, promtool, "test", "rules", filepath.Base(copied))
	if err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", unitTestFile, err, out)
	}
	t.Logf("promtool test rules:\n%s", out)
}

// TestEveryAlertHasItsLabelsAndRunbook fails when an alert lacks a severity
// of severities, an annotation of requiredAnnotations or a runbook_url
// naming docs/runbooks/<alert>.md, when that runbook does not exist or is
// not linked from docs/runbooks/README.md, and when a runbook names no
// alert.
func TestEveryAlertHasItsLabelsAndRunbook(t *testing.T) {
	root := reporoot.Must(t)
	alerts := alertRules(t, loadRule(t, root))
	index, err := os.ReadFile(filepath.Join(root, runbookIndex))
	if err != nil {
		t.Fatal(err)
	}

	runbooks := map[string]bool{runbookIndex: true}
	for _, a := range alerts {
		if !slices.Contains(severities, a.Labels["severity"]) {
			t.Errorf("%s: alert %s: label severity is %q, want one of %v", ruleFile, a.Alert, a.Labels["severity"], severities)
		}
		for _, name := range requiredAnnotations {
			if strings.TrimSpace(a.Annotations[name]) == "" {
				t.Errorf("%s: alert %s has no %s annotation", ruleFile, a.Alert, name)
			}
		}
		runbook := runbookDir + "/" + a.Alert + ".md"
		runbooks[runbook] = true
		if got, want := a.Annotations["runbook_url"], runbookURLBase+a.Alert+".md"; got != want {
			t.Errorf("%s: alert %s: runbook_url is %q, want %q", ruleFile, a.Alert, got, want)
		}
		if _, err := os.Stat(filepath.Join(root, runbook)); err != nil {
			t.Errorf("%s: alert %s has no runbook: write %s (what it means, its impact, how to confirm it, how to fix it)", ruleFile, a.Alert, runbook)
		}
		if !bytes.Contains(index, []byte("]("+a.Alert+".md)")) {
			t.Errorf("%s does not link the runbook of alert %s: add its row, [%s](%s.md)", runbookIndex, a.Alert, a.Alert, a.Alert)
		}
	}

	files, err := filepath.Glob(filepath.Join(root, runbookDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		rel := runbookDir + "/" + filepath.Base(f)
		if !runbooks[rel] {
			t.Errorf("%s is the runbook of no alert of %s: remove it or correct its name", rel, ruleFile)
		}
	}
}

// TestEveryAlertIsUnitTested fails when an alert of the PrometheusRule has
// no unit test case where it fires and one where it does not, when a case
// names an alert the PrometheusRule does not have, or when the unit tests
// do not load the extracted rule groups.
func TestEveryAlertIsUnitTested(t *testing.T) {
	root := reporoot.Must(t)
	alerts := alertRules(t, loadRule(t, root))

	src, err := os.ReadFile(filepath.Join(root, unitTestFile))
	if err != nil {
		t.Fatal(err)
	}
	var tests unitTests
	if err := yaml.Unmarshal(src, &tests); err != nil {
		t.Fatalf("%s: %v", unitTestFile, err)
	}
	if !slices.Equal(tests.RuleFiles, []string{extractedRules}) {
		t.Errorf("%s: rule_files is %q, want [%s]: the rule groups of %s are written under that name beside a copy of the file",
			unitTestFile, tests.RuleFiles, extractedRules, ruleFile)
	}

	fires, silent := map[string]bool{}, map[string]bool{}
	known := map[string]bool{}
	for _, a := range alerts {
		known[a.Alert] = true
	}
	for _, tc := range tests.Tests {
		for _, c := range tc.AlertRuleTests {
			if !known[c.Alertname] {
				t.Errorf("%s: test %q expects alert %q at %s, which %s does not have", unitTestFile, tc.Name, c.Alertname, c.EvalTime, ruleFile)
			}
			if len(c.ExpAlerts) > 0 {
				fires[c.Alertname] = true
			} else {
				silent[c.Alertname] = true
			}
		}
	}
	for _, a := range alerts {
		if !fires[a.Alert] {
			t.Errorf("%s: no case makes alert %s fire: add one to %s", ruleFile, a.Alert, unitTestFile)
		}
		if !silent[a.Alert] {
			t.Errorf("%s: no case expects alert %s not to fire: add one to %s", ruleFile, a.Alert, unitTestFile)
		}
	}
}

// --- The PrometheusRule

// prometheusRule is what the tests read of a PrometheusRule; the rule
// groups are also kept as they are, to be written out for promtool.
type prometheusRule struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Groups []ruleGroup `json:"groups"`
	} `json:"spec"`

	groups []any // spec.groups, untyped
}

type ruleGroup struct {
	Name  string `json:"name"`
	Rules []rule `json:"rules"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// loadRule reads the PrometheusRule of ruleFile under root.
func loadRule(t *testing.T, root string) prometheusRule {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, ruleFile))
	if err != nil {
		t.Fatal(err)
	}
	var r prometheusRule
	if err := yaml.Unmarshal(src, &r); err != nil {
		t.Fatalf("%s: %v", ruleFile, err)
	}
	if r.APIVersion != "monitoring.coreos.com/v1" || r.Kind != "PrometheusRule" {
		t.Fatalf("%s holds a %s %s, want a monitoring.coreos.com/v1 PrometheusRule", ruleFile, r.APIVersion, r.Kind)
	}
	var raw struct {
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(src, &raw); err != nil {
		t.Fatalf("%s: %v", ruleFile, err)
	}
	if len(raw.Spec.Groups) == 0 {
		t.Fatalf("%s has no spec.groups", ruleFile)
	}
	r.groups = raw.Spec.Groups
	return r
}

// alertRules returns the alerting rules of r; it fails the test when there
// are none, or when two share a name.
func alertRules(t *testing.T, r prometheusRule) []rule {
	t.Helper()
	var alerts []rule
	seen := map[string]bool{}
	for _, g := range r.Spec.Groups {
		for _, ru := range g.Rules {
			if ru.Alert == "" {
				continue
			}
			if seen[ru.Alert] {
				t.Errorf("%s: alert %s is defined twice", ruleFile, ru.Alert)
			}
			seen[ru.Alert] = true
			alerts = append(alerts, ru)
		}
	}
	if len(alerts) == 0 {
		t.Fatalf("%s has no alerting rule", ruleFile)
	}
	return alerts
}

// writeRules writes the rule groups of r as a Prometheus rule file.
func writeRules(t *testing.T, r prometheusRule, path string) {
	t.Helper()
	out, err := yaml.Marshal(map[string]any{"groups": r.groups})
	if err != nil {
		t.Fatal(err)
	}
	header := fmt.Sprintf("# The rule groups (spec.groups) of %s.\n", ruleFile)
	if err := os.WriteFile(path, append([]byte(header), out...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// --- The unit tests

// unitTests is what the test reads of a `promtool test rules` file.
type unitTests struct {
	RuleFiles []string   `json:"rule_files"`
	Tests     []unitTest `json:"tests"`
}

type unitTest struct {
	Name           string          `json:"name"`
	AlertRuleTests []alertRuleCase `json:"alert_rule_test"`
}

type alertRuleCase struct {
	EvalTime  string `json:"eval_time"`
	Alertname string `json:"alertname"`
	ExpAlerts []any  `json:"exp_alerts"`
}

// --- Helpers

// needPromtool returns promtool's path from PROMTOOL, or skips the test
// when it is unset (fails it under CI, which must run every test).
func needPromtool(t *testing.T) string {
	t.Helper()
	return toolbin.Path(t, envPromtool, "promtool")
}

// run runs a command in dir and returns its combined output.
func run(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
