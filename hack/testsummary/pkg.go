package main

import (
	"fmt"
	"sort"
	"strings"
)

// outputLine is one line of a package's output and the test it belongs
// to ("" for the package's own, such as TestMain's).
type outputLine struct {
	test, text string
}

// test is what a package's test ended as, and its last line before the end.
type test struct {
	action   string
	lastLine string
}

// pkg gathers the events of one package until it ends.
type pkg struct {
	name     string
	action   string // pass, fail or skip (no test files)
	elapsed  float64
	lines    []outputLine
	tests    map[string]*test
	order    []string
	skipLine string
	// notRun is "build failed" or "setup failed" when go test ran no
	// test binary for the package.
	notRun string
}

func newPkg(name string) *pkg {
	return &pkg{name: name, tests: map[string]*test{}}
}

// add records one event of the package.
func (p *pkg) add(e event) {
	switch {
	case e.Test == "" && e.Action == "output":
		p.addPackageLine(e.Output)
	case e.Test == "" && isEnd(e.Action):
		p.action, p.elapsed = e.Action, e.Elapsed
	case e.Test != "":
		p.addTestEvent(e)
	}
}

func (p *pkg) addPackageLine(text string) {
	p.lines = append(p.lines, outputLine{text: text})
	if p.skipLine == "" && packageSkipLine.MatchString(text) {
		p.skipLine = strings.TrimSpace(text)
	}
	for _, why := range []string{"build failed", "setup failed"} {
		if strings.HasSuffix(strings.TrimSpace(text), "["+why+"]") {
			p.notRun = why
		}
	}
}

func (p *pkg) addTestEvent(e event) {
	t := p.tests[e.Test]
	if t == nil {
		t = &test{}
		p.tests[e.Test] = t
		p.order = append(p.order, e.Test)
	}
	switch {
	case e.Action == "output":
		p.lines = append(p.lines, outputLine{test: e.Test, text: e.Output})
		if !framing(e.Output) && !strings.HasPrefix(strings.TrimSpace(e.Output), "--- ") {
			t.lastLine = e.Output
		}
	case isEnd(e.Action):
		t.action = e.Action
	}
}

func isEnd(action string) bool {
	return action == "pass" || action == "fail" || action == "skip"
}

// count returns how many of the package's tests ended with action.
func (p *pkg) count(action string) int {
	n := 0
	for _, t := range p.tests {
		if t.action == action {
			n++
		}
	}
	return n
}

// skipReasons groups the package's skipped tests by their reason, most
// frequent first: "2 tests: not in -short mode (TestOne, TestTwo)".
func (p *pkg) skipReasons() []string {
	byReason := map[string][]string{}
	for _, name := range p.order {
		if t := p.tests[name]; t.action == "skip" {
			r := skipMessage(t.lastLine)
			byReason[r] = append(byReason[r], name)
		}
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := byReason[reasons[i]], byReason[reasons[j]]
		return len(a) > len(b) || len(a) == len(b) && reasons[i] < reasons[j]
	})
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = fmt.Sprintf("%s: %s (%s)", plural(len(byReason[r]), "test"), r, names(byReason[r]))
	}
	return out
}

// names lists up to three test names, and how many more.
func names(tests []string) string {
	if len(tests) <= 3 {
		return strings.Join(tests, ", ")
	}
	return fmt.Sprintf("%s, and %d more", strings.Join(tests[:3], ", "), len(tests)-3)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
