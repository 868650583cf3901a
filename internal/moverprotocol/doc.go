// Package moverprotocol is the contract between the operator and its data
// mover: the subcommands and flags the backup, restore, inspect, copy and delete
// Jobs run the operator's image with, what the API's S3 storage resolves to
// (storage.go), the exit codes the Jobs' pod failure policy reads, and the
// JSON result the mover leaves as its container's termination message.
// It imports only the API types.
// Imported by controllers, internal/backupstore, internal/datamover,
// internal/liveapi and test/harness/moverrunner.
//
// Both sides use this package: the data mover's subcommands
// (internal/datamover, run by cmd/manager) write what the controllers' Job
// builders and readers expect, and the live API resolves a location's S3
// storage as the Jobs do, so a change on one side is a compile error on the
// other.
package moverprotocol
