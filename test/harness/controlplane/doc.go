// Package controlplane starts a kube-apiserver and etcd (envtest) for one
// test, from the binaries `make test` builds into bin/.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
package controlplane
