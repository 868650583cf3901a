// Package datamover moves an Echo's data directory and configuration to
// object storage (S3) or a filesystem (a mounted PVC) and back, and deletes
// backups. The operator's backup, restore and artifact deletion Jobs run it
// through its subcommands (cli.go), which the manager binary serves.
// It imports the mover's contract (internal/moverprotocol) and nothing else
// of the operator: it runs in the Jobs' pods.
//
// A backup is two objects under a key:
//
//	<key>/data.tar.gz   (data.tar without compression) the archive
//	<key>/manifest.json what the archive holds, with checksums
//
// The manifest is written last, and deleted first: its presence means the
// backup is complete.
// The archive holds config.json (the configuration given to Backup) and
// every file and directory of the data directory under data/. Backup and
// Restore stream: neither holds the archive in memory, see Backup and
// Restore for their memory bounds.
package datamover
