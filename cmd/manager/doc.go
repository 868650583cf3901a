// Command manager runs echo-operator: the Helm release reconcilers loaded
// from watches.yaml and the Go controllers, in one controller manager.
// It parses flags and environment into cmd/manager/app's options; it must
// not import test/ or hack/, and nothing imports it.
package main
