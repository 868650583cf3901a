// Package reporoot finds the root of the echo-operator repository, for
// tests and tools that read its files.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package reporoot
