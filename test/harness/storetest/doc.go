// Package storetest holds the helpers that the tests of the backup stores
// and of the data mover share: writing and reading a key whole, and a
// tmpfs of given options for full-disk tests.
//
// It imports nothing of the operator, so that internal/backupstore's own
// tests can use it; only tests import it, never the product.
package storetest
