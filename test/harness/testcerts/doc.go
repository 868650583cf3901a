// Package testcerts makes certificate authorities and certificates signed
// by them, for tests of servers that must be verified and of clients that
// must present a certificate.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package testcerts
