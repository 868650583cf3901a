package main

import (
	"regexp"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json), with the fields
// of build output (ImportPath) that go test adds.
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string
}

// A suite's TestMain that skips the whole package prints a line like one
// of these (test/harness/localcluster, test/e2e, test/olm, ...).
var packageSkipLine = regexp.MustCompile(`^(skipping |SKIP: )`)

// fileLinePrefix is what the testing package puts before a t.Skip message.
var fileLinePrefix = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// framing says whether line is the testing package's own marker of a test
// starting, pausing or resuming, which `go test` without -v does not print.
func framing(line string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// skipMessage turns the last line a test printed before it skipped into
// its reason: the t.Skip message without its file and line.
func skipMessage(line string) string {
	msg := strings.TrimSpace(fileLinePrefix.ReplaceAllString(line, ""))
	if msg == "" || strings.HasPrefix(msg, "--- SKIP") {
		return "(no reason given)"
	}
	return msg
}
