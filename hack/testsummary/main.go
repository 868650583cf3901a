package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	verbose := flag.Bool("v", false, "pass every line of output through as it arrives (go test -v)")
	flag.Parse()
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
