// Package echoserver implements the echo HTTP server that the echo-operator
// deploys: it answers every non-reserved request with a JSON description of
// that request, exposes health, readiness and Prometheus endpoints, and can
// keep a durable per-instance journal of the requests it has echoed.
// It imports no package of the operator: the echo server is a program of its
// own.
package echoserver
