// Package clusteruser is what a user types and reads on a cluster, for the
// suites that drive one: kubectl run as typed, and the state of a
// namespace's pods (phase, conditions, containers, logs, events) to print
// when a test fails, and the documentation's kubectl commands as a test
// runs them (DocCommand), with the names the test gives.
// Tests only: nothing in the product imports it.
package clusteruser
