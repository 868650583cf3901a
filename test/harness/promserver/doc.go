// Package promserver runs a real Prometheus server for tests: on
// 127.0.0.1, with a configuration and rule files the test writes, scraping
// and evaluating every second. Tests read it through its HTTP API.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
//
// The binary is found through the PROMETHEUS environment variable, which
// the Makefile sets (see hack/build-prometheus.sh).
package promserver
