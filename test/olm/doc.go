// Package olm installs the operator the way its users do. TestDeploy
// applies config/default with kubectl, as `make deploy` does. The other
// tests install it the way OLM users do: the catalog built from bundle/ is
// served by `opm serve`, and Operator Lifecycle Manager's own `olm` and
// `catalog` commands, run as processes against a simulated cluster
// (test/harness/simcluster), resolve a Subscription, install the CSV with its
// CRDs, ServiceAccount and RBAC, and upgrade it. Either way, the manager
// binary then runs with the identity the install gave it (its
// ServiceAccount's token), which proves the install's permissions are
// enough.
// Tests only: nothing imports it; it drives the product through OLM and the
// Kubernetes API with test/harness.
//
// olm and catalog both serve metrics on :8080 and opm on a port of every
// interface, so the suite runs in a network namespace of its own: the test
// binary re-executes itself in one, where nothing else listens.
package olm
