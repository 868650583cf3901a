// Package e2enode runs the operator, its Echoes and their backups as
// containers: a real node (test/harness/realnode: kubelet, containerd, runc,
// kube-proxy) beside a simulated control plane that runs no fake nodes.
// The operator is deployed with `make deploy` from images of this tree, and
// the tests drive it only through the Kubernetes API, with the kubectl
// commands the docs show.
//
// It runs where a real node can (root on Linux) and skips elsewhere with a
// line that says why; under CI a missing node binary fails it instead.
// Test gear: nothing imports it.
package e2enode
