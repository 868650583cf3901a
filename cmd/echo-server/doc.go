// Command echo-server runs the echo HTTP server deployed by the
// echo-operator. Every flag has an environment variable fallback; an
// explicitly given flag wins over the environment.
// It imports internal/echoserver only; nothing imports it.
package main
