package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
)

const (
	resultOK         = "ok"
	resultFail       = "FAIL"
	resultSkipped    = "skipped"
	resultNoTests    = "no test files"
	resultIncomplete = "incomplete"
)

// result is what the package came to: skipped when it passed without a
// test that passed or failed, because its TestMain or every test skipped.
func (p *pkg) result() string {
	switch p.action {
	case "fail":
		return resultFail
	case "skip":
		return resultNoTests
	case "":
		return resultIncomplete
	}
	ran := p.count("pass") + p.count("fail")
	if ran == 0 && (p.skipLine != "" || p.count("skip") > 0) {
		return resultSkipped
	}
	return resultOK
}

// notes says why the package failed or what of it skipped, and why.
func (p *pkg) notes() []string {
	var notes []string
	switch {
	case p.notRun != "":
		notes = append(notes, p.notRun)
	case p.result() == resultFail:
		notes = append(notes, "failed: "+strings.Join(p.failedTests(), ", "))
	case p.result() == resultIncomplete:
		notes = append(notes, "no result: go test stopped before the package ended")
	}
	if p.skipLine != "" {
		notes = append(notes, p.skipLine)
	}
	notes = append(notes, p.skipReasons()...)
	if len(notes) == 0 && p.result() == resultOK && len(p.tests) == 0 {
		notes = append(notes, "no tests ran")
	}
	return notes
}

// failedTests lists the top-level tests that failed or never ended (the
// test binary timed out or exited in them), or says that none did (the
// TestMain failed the package).
func (p *pkg) failedTests() []string {
	var failed []string
	for _, name := range p.order {
		if strings.Contains(name, "/") {
			continue
		}
		switch p.tests[name].action {
		case "fail":
			failed = append(failed, name)
		case "":
			failed = append(failed, name+" (never ended)")
		}
	}
	if len(failed) == 0 {
		return []string{"no test (see the package's output above)"}
	}
	return failed
}

// report prints the table of every package with tests, and a last line
// that counts each result.
func (s *summary) report() {
	names := append([]string(nil), s.names...)
	sort.Strings(names)
	prefix := commonDir(names)
	counts := map[string]int{}
	s.printIncomplete(names)
	_, _ = fmt.Fprintln(s.out, "\nSummary of go test:")
	w := tabwriter.NewWriter(s.out, 0, 8, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "RESULT\tTIME\tPACKAGE\tSKIPPED OR FAILED, AND WHY")
	for _, name := range names {
		p := s.pkgs[name]
		counts[p.result()]++
		if p.result() != resultNoTests {
			writeRow(w, p, strings.TrimPrefix(name, prefix))
		}
	}
	_ = w.Flush()
	_, _ = fmt.Fprintln(s.out, countLine(counts))
}

// printIncomplete prints, as a failing package's, the output of each
// package that never ended (go test interrupted or killed): it may say why.
func (s *summary) printIncomplete(names []string) {
	for _, name := range names {
		if p := s.pkgs[name]; !s.verbose && p.result() == resultIncomplete {
			s.printPackage(p)
		}
	}
}

func writeRow(w *tabwriter.Writer, p *pkg, name string) {
	notes, first := p.notes(), ""
	if len(notes) > 0 {
		first, notes = notes[0], notes[1:]
	}
	_, _ = fmt.Fprintf(w, "%s\t%.1fs\t%s\t%s\n", p.result(), p.elapsed, name, first)
	for _, n := range notes {
		_, _ = fmt.Fprintf(w, "\t\t\t%s\n", n)
	}
}

// countLine is the last line: how many packages came to each result.
func countLine(counts map[string]int) string {
	if len(counts) == 0 {
		return "FAIL: go test reported no package (see its errors above)"
	}
	var parts []string
	for _, r := range []string{resultOK, resultSkipped, resultFail, resultIncomplete, resultNoTests} {
		if counts[r] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[r], r))
		}
	}
	verdict := "PASS"
	if counts[resultFail]+counts[resultIncomplete] > 0 {
		verdict = "FAIL"
	}
	return fmt.Sprintf("%s: packages: %s", verdict, strings.Join(parts, ", "))
}

// commonDir is the directory prefix the package paths share, which the
// table leaves out: the module's path and a slash.
func commonDir(names []string) string {
	if len(names) == 0 {
		return ""
	}
	prefix := names[0]
	for _, n := range names[1:] {
		for !strings.HasPrefix(n, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if len(names) == 1 {
		prefix = ""
	}
	return prefix[:strings.LastIndex(prefix, "/")+1]
}
