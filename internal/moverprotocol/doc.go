// Package moverprotocol is the contract between the operator and its data
// mover: the subcommands and flags the backup, restore, inspect and delete
// Jobs run the operator's image with, what the API's S3 storage resolves to
// (storage.go), the exit codes the Jobs' pod failure policy reads, and the
// JSON result the mover leaves as its container's termination message.
// It imports only the API types: the mover (internal/datamover), the
// backup store (internal/backupstore) and the controllers build on it.
//
// Both sides use this package: cmd/manager's subcommands write what the
// controllers' Job builders and readers expect, so a change on one side is a
// compile error on the other.
package moverprotocol
