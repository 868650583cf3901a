// Package datamover is the program of the operator's data mover Jobs: it
// moves an Echo's data directory and configuration to a backup store
// (internal/backupstore: S3 or a filesystem, a mounted PVC) and back, and
// deletes backups. The operator's backup, restore and artifact deletion
// Jobs run it through its subcommands (cli.go), which the manager binary
// serves (cmd/manager); nothing else of the product imports it.
// It imports the mover's contract (internal/moverprotocol) and the backup
// store (internal/backupstore, which defines the layout of a backup and
// its manifest) and nothing else of the operator: it runs in the Jobs'
// pods.
//
// Backup writes the archive (archive.go) and then its manifest; Restore
// verifies the archive against the manifest as it extracts it
// (restore_extract.go) and swaps it into place (restore_swap.go). Backup
// and Restore stream: neither holds the archive in memory, see Backup and
// Restore for their memory bounds.
package datamover
