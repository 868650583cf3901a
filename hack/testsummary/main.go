package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	verbose := flag.Bool("v", false, "pass every line of output through as it arrives (go test -v)")
	flag.Parse()
	// Ctrl-C reaches go test and this command alike: go test stops its
	// test binaries and exits, and this command reads to the end of its
	// output, then says which packages never ended.
	signal.Ignore(os.Interrupt)
	s := newSummary(os.Stdout, os.Stderr, *verbose)
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(1)
	}
	s.report()
	if s.failed() {
		os.Exit(1)
	}
}
