// Command httpget gets a URL and prints the body, as curl -k would: the
// real-node suite runs it in a pod to scrape the operator's metrics
// through their Service with a ServiceAccount token (busybox's wget
// cannot complete a TLS handshake with Go's server).
// Test gear: only the suite builds it, and nothing imports it.
package main
