// Package managerbin builds the manager binary from this tree, for the
// suites and the benchmark that run it as a process, as users do.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package managerbin
