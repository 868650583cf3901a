// Package backupstore is where backups are kept and how they are laid
// out: the stores (S3 in store_s3.go, with its server-side encryption in
// store_s3_encryption.go and the bounds of a listing's requests in
// store_s3_bounds.go; a filesystem, a mounted PVC, in store_fs.go), the
// manifest and archive format (manifest.go; the summary a listing reads
// alone, manifest_summary.go), the bounded listing of a store's backups
// (catalog.go) and the errors all of them return, with the reason and
// retryability a Job reports for each (errors.go).
// It imports the mover's contract (internal/moverprotocol) and nothing else
// of the operator. The data mover (internal/datamover) writes and reads
// backups through it in the Jobs' pods; the live API (internal/liveapi)
// lists them with it, without linking the mover.
//
// A backup is two objects under a key:
//
//	<key>/data.tar.gz   (data.tar without compression) the archive
//	<key>/manifest.json what the archive holds, with checksums
//
// The manifest is written last, and deleted first: its presence means the
// backup is complete.
// The archive holds config.json (the configuration given to a backup) and
// every file and directory of the data directory under data/.
package backupstore
