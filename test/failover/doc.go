// Package failover runs the manager binary, built from this tree, against a
// simulated cluster whose control plane is restarted under it, and as two
// replicas with leader election whose leader is SIGKILLed: every Echo must
// converge all the same.
// Tests only: nothing imports it; it drives the product through the
// Kubernetes API with test/harness.
//
// The default run is small enough for `go test ./...`; CHAOS_FULL=1 rolls
// out 300 Echos instead of 30. BenchmarkLeaderTakeover measures the
// takeover time (`make bench-failover`).
package failover
