package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// run feeds the recorded `go test -json` lines of testdata/name to a
// summary and returns what it printed, on standard output and error.
func run(t *testing.T, name string, verbose bool) (s *summary, out, errOut string) {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var o, e bytes.Buffer
	s = newSummary(&o, &e, verbose)
	if err := s.read(f); err != nil {
		t.Fatal(err)
	}
	s.report()
	return s, o.String(), e.String()
}

// testdata/fake.jsonl: `go test -json ./...` of a module with a package
// whose tests pass, fail, skip and fail in a subtest (a), one whose
// TestMain skips it (b), one whose tests all skip (c), one that does not
// build (d) and one without tests (e).
func TestTheSummaryNamesEveryFailureAndSkip(t *testing.T) {
	s, out, _ := run(t, "fake.jsonl", false)
	want := `
Summary of go test:
RESULT   TIME  PACKAGE  SKIPPED OR FAILED, AND WHY
FAIL     0.0s  a        failed: TestFails, TestParent
                        1 test: needs the thing: run through make (TestSkips)
skipped  0.3s  b        skipping the b tests: not root
skipped  0.0s  c        2 tests: not in -short mode (TestOne, TestTwo)
FAIL     0.0s  d        build failed
FAIL: packages: 2 skipped, 2 FAIL, 1 no test files
`
	if !strings.HasSuffix(out, want) {
		t.Errorf("the summary ends with\n%s\nwant\n%s", tail(out, 9), want)
	}
	if !s.failed() {
		t.Error("failed() = false with two failed packages")
	}
}

// Without -v, a failing package prints its failing tests' output as go
// test would, and a passing one only its ok line.
func TestFailuresPassThroughAsGoTestPrintsThem(t *testing.T) {
	_, out, errOut := run(t, "fake.jsonl", false)
	for _, line := range []string{
		"    a_test.go:9: the value is wrong\n--- FAIL: TestFails (0.00s)\n",
		"    a_test.go:15: sub failed\n--- FAIL: TestParent/sub (0.00s)\n",
		"FAIL\texample.test/fake/a\t0.003s\n",
		"ok  \texample.test/fake/b\t0.283s\n",
		"FAIL\texample.test/fake/d [build failed]\n",
		"?   \texample.test/fake/e\t[no test files]\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("the output lacks %q:\n%s", line, out)
		}
	}
	for _, hidden := range []string{"=== RUN", "TestPasses", "--- SKIP", "skipping the b tests: not root\nok"} {
		if strings.Contains(out, hidden) {
			t.Errorf("the output holds %q, which go test without -v does not print:\n%s", hidden, out)
		}
	}
	if want := "d/d_test.go:5:33: undefined: undefined\n"; !strings.Contains(errOut, want) {
		t.Errorf("standard error = %q, want the build error %q", errOut, want)
	}
}

// With -v every line passes through.
func TestVerbosePassesEveryLine(t *testing.T) {
	_, out, _ := run(t, "fake.jsonl", true)
	for _, line := range []string{"=== RUN   TestPasses\n", "--- PASS: TestPasses (0.00s)\n",
		"    a_test.go:12: needs the thing: run through make\n", "skipping the b tests: not root\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("the output lacks %q:\n%s", line, out)
		}
	}
}

// testdata/short.jsonl: `go test -json -short` of internal/names (passes),
// test/e2enode (its TestMain skips it), test/alerts (promtool's tests skip
// without PROMTOOL) and hack/images (no tests).
func TestAGreenRunSaysWhatItSkipped(t *testing.T) {
	s, out, _ := run(t, "short.jsonl", false)
	for _, line := range []string{
		"skipped  0.1s  test/e2enode    skipping the real-node suite: it starts a real node: not in -short mode\n",
		"ok       0.0s  test/alerts     2 tests: PROMTOOL is not set: run the tests through make (make test), " +
			"which builds promtool and sets it (TestRulesPassPromtoolCheck, TestAlertsPassTheirUnitTests)\n",
		"PASS: packages: 2 ok, 1 skipped, 1 no test files\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("the summary lacks %q:\n%s", line, out)
		}
	}
	if s.failed() {
		t.Error("failed() = true with every package passed")
	}
}

// testdata/timeout.jsonl: `go test -json -timeout 2s` of a package whose
// test hangs (f) and one whose test panics (g).
func TestATimeoutOrAPanicFailsAndNamesItsTest(t *testing.T) {
	s, out, _ := run(t, "timeout.jsonl", false)
	for _, line := range []string{
		"    f_test.go:11: waiting for something\npanic: test timed out after 2s\n",
		"panic: assignment to entry in nil map",
		"FAIL    2.1s  f        failed: TestHangs (never ended)\n",
		"FAIL    0.2s  g        failed: TestPanics\n",
		"FAIL: packages: 2 FAIL\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("the output lacks %q:\n%s", line, out)
		}
	}
	if !s.failed() {
		t.Error("failed() = false with two failed packages")
	}
}

// A package whose events stop before it ends (go test killed) fails.
func TestAPackageThatNeverEndedFails(t *testing.T) {
	var o, e bytes.Buffer
	s := newSummary(&o, &e, false)
	in := `{"Action":"start","Package":"m/p"}
{"Action":"run","Package":"m/p","Test":"TestSlow"}
{"Action":"output","Package":"m/p","Test":"TestSlow","Output":"    slow_test.go:9: still waiting\n"}
`
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	s.report()
	if !s.failed() {
		t.Error("failed() = false for a package that never ended")
	}
	if !strings.Contains(o.String(), "incomplete") || !strings.HasSuffix(o.String(), "FAIL: packages: 1 incomplete\n") {
		t.Errorf("the summary does not call the package incomplete:\n%s", o.String())
	}
	if !strings.HasPrefix(o.String(), "    slow_test.go:9: still waiting\n") {
		t.Errorf("the output of the package that never ended is not printed before the summary:\n%s", o.String())
	}
}

// A test skipped without a message (t.SkipNow) says so.
func TestASkipWithoutAMessage(t *testing.T) {
	var o, e bytes.Buffer
	s := newSummary(&o, &e, false)
	in := `{"Action":"start","Package":"m/p"}
{"Action":"run","Package":"m/p","Test":"TestX"}
{"Action":"output","Package":"m/p","Test":"TestX","Output":"=== RUN   TestX\n"}
{"Action":"output","Package":"m/p","Test":"TestX","Output":"--- SKIP: TestX (0.00s)\n"}
{"Action":"skip","Package":"m/p","Test":"TestX"}
{"Action":"output","Package":"m/p","Output":"ok  \tm/p\t0.01s\n"}
{"Action":"pass","Package":"m/p","Elapsed":0.01}
`
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	s.report()
	if want := "skipped  0.0s  m/p      1 test: (no reason given) (TestX)\n"; !strings.Contains(o.String(), want) {
		t.Errorf("the summary lacks %q:\n%s", want, o.String())
	}
}

// go test failing before any package (a bad pattern, a broken go.mod)
// writes its errors to standard error and no event: that fails too.
func TestNoPackageFails(t *testing.T) {
	var o, e bytes.Buffer
	s := newSummary(&o, &e, false)
	if err := s.read(strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	s.report()
	if !s.failed() {
		t.Error("failed() = false when go test reported no package")
	}
	if want := "FAIL: go test reported no package (see its errors above)\n"; !strings.HasSuffix(o.String(), want) {
		t.Errorf("the summary ends with %q, want %q", tail(o.String(), 2), want)
	}
}

// Lines that are not events (go test's own errors, say) pass through.
func TestLinesThatAreNotEventsPassThrough(t *testing.T) {
	var o, e bytes.Buffer
	s := newSummary(&o, &e, false)
	in := "go: warning: something\n{not json\n"
	if err := s.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	if o.String() != in {
		t.Errorf("output = %q, want %q", o.String(), in)
	}
}

func TestSkipMessage(t *testing.T) {
	for line, want := range map[string]string{
		"    suite_test.go:48: runs with CHAOS_FULL=1 (make test-chaos)\n": "runs with CHAOS_FULL=1 (make test-chaos)",
		"    helpers_test.go:43: needs the control plane\n":                "needs the control plane",
		"":                             "(no reason given)",
		"--- SKIP: TestX (0.00s)\n":    "(no reason given)",
		"        a.go:1: nested one\n": "nested one",
	} {
		if got := skipMessage(line); got != want {
			t.Errorf("skipMessage(%q) = %q, want %q", line, got, want)
		}
	}
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
