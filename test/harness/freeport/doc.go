// Package freeport finds a TCP port of a loopback address that nothing
// listens on, for the servers tests start.
// Test gear: only tests and the test harness import it, never the
// product.
package freeport
