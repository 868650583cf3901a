// Command testsummary reads `go test -json` on its standard input, prints
// what `go test` would have printed without -json, and ends with a table of
// every package: ok, FAIL or skipped, its time, and why it or its tests
// skipped. A green run whose real node, OLM or end-to-end suite skipped
// (not root, a tool missing, -short) says so at the end instead of hiding
// it behind an `ok` line. `make test` and `make test-unit` pipe into it:
//
//	go test ./... -json | testsummary [-v]
//
// Without -v it prints, like `go test` in package list mode, only the
// `ok` line of a passing package and, for a failing one, its own output and
// that of each test that did not pass, without the `=== RUN` framing. With
// -v (make passes it when TEST_FLAGS holds -v) every line passes through as
// it arrives. A line that is not JSON passes through unchanged, and build
// errors go to standard error, where `go test` prints them.
//
// A package skips as a whole when its TestMain prints a line starting with
// "skipping " or "SKIP: " and runs no test (the suites of test/ do), or when
// every test it ran skipped; the reason is that line, or each t.Skip
// message with how many tests gave it. It exits 1 when any package failed
// or failed to build, else 0; make's pipefail keeps go test's own status.
// Ctrl-C stops go test, not this command: it reads on to the end and
// still prints the table, with the tests that never ended.
//
// A development command: it imports the standard library only, so that
// it builds whatever state the project's packages are in, and nothing
// imports it.
package main
