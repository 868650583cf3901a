package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// summary passes `go test -json` through as go test's own output and
// keeps every package for the table at the end.
type summary struct {
	out, errOut io.Writer
	verbose     bool
	pkgs        map[string]*pkg
	names       []string
}

func newSummary(out, errOut io.Writer, verbose bool) *summary {
	return &summary{out: out, errOut: errOut, verbose: verbose, pkgs: map[string]*pkg{}}
}

// read consumes the events in r until it ends.
func (s *summary) read(r io.Reader) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			s.line(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading go test's output: %w", err)
		}
	}
}

// line handles one line of input: an event, or anything else, which
// passes through as it is.
func (s *summary) line(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
		_, _ = fmt.Fprint(s.out, line)
		return
	}
	switch {
	case e.Action == "build-output":
		_, _ = fmt.Fprint(s.errOut, e.Output)
	case e.Package != "":
		s.event(e)
	}
}

func (s *summary) event(e event) {
	p := s.pkgs[e.Package]
	if p == nil {
		p = newPkg(e.Package)
		s.pkgs[e.Package] = p
		s.names = append(s.names, e.Package)
	}
	p.add(e)
	if s.verbose && e.Action == "output" {
		_, _ = fmt.Fprint(s.out, e.Output)
	}
	if e.Test == "" && isEnd(e.Action) {
		if !s.verbose {
			s.printPackage(p)
		}
		p.lines = nil // printed: the table needs none of it
	}
}

// printPackage prints what go test without -v prints of a package that
// ended: the `ok` line of a passing one, the `?` line of one without test
// files, and all of a failing one but its passed and skipped tests.
func (s *summary) printPackage(p *pkg) {
	for _, l := range p.lines {
		if p.shows(l) {
			_, _ = fmt.Fprint(s.out, l.text)
		}
	}
}

// shows says whether go test without -v would print line of the package.
func (p *pkg) shows(l outputLine) bool {
	switch p.action {
	case "pass":
		return l.test == "" && strings.HasPrefix(l.text, "ok ")
	case "skip":
		return l.test == ""
	}
	if l.test == "" {
		return true
	}
	t := p.tests[l.test]
	return t.action != "pass" && t.action != "skip" && !framing(l.text)
}

// failed says whether any package failed or never ended, or go test
// reported none (it failed before it ran any).
func (s *summary) failed() bool {
	if len(s.pkgs) == 0 {
		return true
	}
	for _, p := range s.pkgs {
		if r := p.result(); r == resultFail || r == resultIncomplete {
			return true
		}
	}
	return false
}
