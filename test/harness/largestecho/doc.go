// Package largestecho builds the largest Echo spec the API admits, every
// map, list and string of it filled to its bound, and a runnable one as
// large as a cluster lets it run. It owns what "the largest admitted Echo"
// is: api/v1alpha1's admission test checks that the API admits Spec and
// that its JSON stays under SpecBytesBound, and the end-to-end benchmark
// (test/e2e, make bench-largest) measures what the manager holds per Echo
// of RunnableSpec.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package largestecho
