package moverprotocol

// Reason classifies a failure of the data mover, for machine readers: the
// operator turns it into the reason of a backup's or restore's condition
// and into what to fix.
type Reason string

// The reasons. Retryable ones go with ExitRetryable, the others with
// ExitPermanent.
const (
	// ReasonInvalidArgument: the flags or the configuration are unusable.
	ReasonInvalidArgument Reason = "InvalidArgument"
	// ReasonUnknownFormat: the backup's format version is not one this
	// mover reads.
	ReasonUnknownFormat Reason = "UnknownFormat"
	// ReasonUnsafePath: an archive entry would land outside the target.
	ReasonUnsafePath Reason = "UnsafePath"
	// ReasonChecksumMismatch: the archive does not match its manifest.
	ReasonChecksumMismatch Reason = "ChecksumMismatch"
	// ReasonCorruptArchive: the archive or its manifest cannot be decoded.
	ReasonCorruptArchive Reason = "CorruptArchive"
	// ReasonTargetNotEmpty: the restore target holds data and the policy
	// is Fail.
	ReasonTargetNotEmpty Reason = "TargetNotEmpty"
	// ReasonAlreadyExists: a complete backup already exists under the key.
	ReasonAlreadyExists Reason = "AlreadyExists"
	// ReasonAccessDenied: the store refused the credentials or the
	// operation.
	ReasonAccessDenied Reason = "AccessDenied"
	// ReasonEncryption: the store refused the server-side encryption, or
	// the SSE-C key an object was written with is not the one given.
	ReasonEncryption Reason = "EncryptionError"
	// ReasonBucketNotFound: the S3 bucket does not exist.
	ReasonBucketNotFound Reason = "BucketNotFound"
	// ReasonNotFound: the backup is not in the store.
	ReasonNotFound Reason = "NotFound"
	// ReasonNoSpace: a local filesystem ran out of space or quota.
	ReasonNoSpace Reason = "NoSpace"
	// ReasonSourceChanged: a file changed while it was being backed up
	// (retryable).
	ReasonSourceChanged Reason = "SourceChanged"
	// ReasonUnavailable: the store could not be reached (retryable).
	ReasonUnavailable Reason = "Unavailable"
	// ReasonDeadlineExceeded: an operation timed out (retryable).
	ReasonDeadlineExceeded Reason = "DeadlineExceeded"
	// ReasonCanceled: the mover was stopped.
	ReasonCanceled Reason = "Canceled"
	// ReasonInternal: anything else.
	ReasonInternal Reason = "Internal"
)

// ExitCode is the exit code of a subcommand that failed with a retryable
// failure or not.
func ExitCode(retryable bool) int {
	if retryable {
		return ExitRetryable
	}
	return ExitPermanent
}
