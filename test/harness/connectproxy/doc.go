// Package connectproxy runs an HTTP proxy for tests, on loopback: it
// opens CONNECT tunnels to loopback addresses, and refuses, recording it,
// every other request: a CONNECT to a host name (the proxy resolves
// nothing), to an address off loopback (nothing leaves the machine), and
// any request that is not a CONNECT.
// Test gear: only tests import it, never the product.
package connectproxy
