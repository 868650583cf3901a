// Package app assembles the operator's controller manager: the Helm
// release reconcilers of watches.yaml and the Go controllers, sharing one
// cache scoped to what the operator manages.
// This is the composition root: it imports the controllers and the internal
// packages it wires, never test/ or hack/.
// Imported by cmd/manager and test/harness/simsuite; the suites that run a
// whole manager import it in their tests.
package app
