// Package simsuite sets up what the suites that run the manager binary as a
// process share (test/e2e, test/chaos, test/failover): the manager built
// from this tree, a simulated cluster with the operator's CRDs installed,
// clients of it, the operator's own namespace, and the manager processes
// themselves (StartManager).
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package simsuite
