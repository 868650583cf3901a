// Package toolbin finds the tools the Makefile builds into bin/ for the
// tests (MinIO, Prometheus, promtool), through the environment variables
// it sets.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package toolbin
