// Package e2e runs the operator as users do: the real manager binary, built
// from this tree, against a simulated cluster (kube-apiserver, etcd,
// kube-controller-manager, kube-scheduler, KWOK nodes), driven only through
// the Kubernetes API.
// Tests only: nothing imports it; it drives the product through the
// Kubernetes API with test/harness.
package e2e
