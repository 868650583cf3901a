package backupstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"syscall"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// Sentinel errors. Every error returned by the stores and by the data
// mover's Backup, Restore, Inspect and Delete (internal/datamover) wraps
// at most one of them (test with errors.Is); Reason names it and Retryable
// says whether running the same operation again may succeed.
var (
	// ErrNotFound: the object (a backup's manifest or archive) does not
	// exist in the store.
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: a complete backup (its manifest) already exists
	// under the key; a backup never overwrites one.
	ErrAlreadyExists = errors.New("backup already exists")
	// ErrAccessDenied: the store refused the credentials or the operation.
	ErrAccessDenied = errors.New("access denied")
	// ErrBucketNotFound: the S3 bucket does not exist.
	ErrBucketNotFound = errors.New("bucket not found")
	// ErrUnavailable: the store could not be reached or answered with a
	// server-side (5xx) error.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrChecksumMismatch: the archive or a file in it does not match the
	// manifest (content, size or the list of files).
	ErrChecksumMismatch = errors.New("checksum mismatch")
	// ErrCorruptArchive: the archive matches its manifest but cannot be
	// decoded, or the manifest itself is malformed; for Inspect, also a
	// manifest whose archive is missing.
	ErrCorruptArchive = errors.New("corrupt archive")
	// ErrUnknownFormat: the manifest's format version is not one this
	// mover reads.
	ErrUnknownFormat = errors.New("unknown backup format")
	// ErrUnsafePath: an archive entry would land outside the target or is
	// not a regular file or directory.
	ErrUnsafePath = errors.New("unsafe archive entry")
	// ErrTargetNotEmpty: the restore target holds data and the policy is
	// ExistingDataFail.
	ErrTargetNotEmpty = errors.New("target data directory is not empty")
	// ErrNoSpace: a local filesystem (data directory or filesystem store)
	// ran out of space or quota.
	ErrNoSpace = errors.New("no space left")
	// ErrSourceChanged: a file shrank or vanished halfway through being
	// read during a backup.
	ErrSourceChanged = errors.New("source changed during backup")
	// ErrInvalidArgument: the options or flags are unusable.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrEncryption: the store refused the server-side encryption asked
	// for (an unknown KMS key, no KMS), or the key an object needs: it was
	// written with SSE-C and read without its key or with another.
	ErrEncryption = errors.New("encryption refused")
)

// reasons maps each sentinel to the short reason written to a Job's
// termination message. Order matters: the first match wins.
var reasons = []struct {
	err       error
	reason    moverprotocol.Reason
	retryable bool
}{
	{ErrInvalidArgument, moverprotocol.ReasonInvalidArgument, false},
	{ErrUnknownFormat, moverprotocol.ReasonUnknownFormat, false},
	{ErrUnsafePath, moverprotocol.ReasonUnsafePath, false},
	{ErrChecksumMismatch, moverprotocol.ReasonChecksumMismatch, false},
	{ErrCorruptArchive, moverprotocol.ReasonCorruptArchive, false},
	{ErrTargetNotEmpty, moverprotocol.ReasonTargetNotEmpty, false},
	{ErrAlreadyExists, moverprotocol.ReasonAlreadyExists, false},
	{ErrEncryption, moverprotocol.ReasonEncryption, false},
	{ErrAccessDenied, moverprotocol.ReasonAccessDenied, false},
	{ErrBucketNotFound, moverprotocol.ReasonBucketNotFound, false},
	{ErrNotFound, moverprotocol.ReasonNotFound, false},
	{ErrNoSpace, moverprotocol.ReasonNoSpace, false},
	{ErrSourceChanged, moverprotocol.ReasonSourceChanged, true},
	{ErrUnavailable, moverprotocol.ReasonUnavailable, true},
}

// Reason classifies err for machine readers: the reason of its sentinel,
// ReasonCanceled, ReasonDeadlineExceeded, ReasonUnavailable for
// unclassified network errors, or ReasonInternal.
func Reason(err error) moverprotocol.Reason {
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return moverprotocol.ReasonCanceled
	case isDialFailure(err):
		// A connection that could not be made in time: the store is
		// unreachable, whichever deadline ran out.
		return moverprotocol.ReasonUnavailable
	case errors.Is(err, context.DeadlineExceeded):
		return moverprotocol.ReasonDeadlineExceeded
	case isNetworkError(err):
		return moverprotocol.ReasonUnavailable
	case isNoSpace(err):
		return moverprotocol.ReasonNoSpace
	}
	return moverprotocol.ReasonInternal
}

// Retryable reports whether running the same operation again may succeed:
// true for network errors, server-side (5xx) store errors, deadlines and a
// source that changed while being read; false for everything that needs a
// person (credentials, a missing bucket or backup, a corrupt or foreign
// archive, a non-empty target, a full disk) and for cancellation.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.retryable
		}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, context.DeadlineExceeded):
		return true
	}
	return isNetworkError(err)
}

// isNetworkError recognises failures of the connection to a store. A TLS
// certificate the client does not trust is not one: retrying cannot fix it.
func isNetworkError(err error) bool {
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalidCert x509.CertificateInvalidError
	if errors.As(err, &certErr) || errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalidCert) {
		return false
	}
	var opErr *net.OpError
	var urlErr *url.Error
	var dnsErr *net.DNSError
	if errors.As(err, &opErr) || errors.As(err, &urlErr) || errors.As(err, &dnsErr) {
		return true
	}
	for _, errno := range []syscall.Errno{
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN,
	} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// isDialFailure recognises a connection to a store that could not be
// made.
func isDialFailure(err error) bool {
	var opErr *net.OpError
	return errors.As(err, &opErr) && opErr.Op == "dial"
}

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// kindError attaches a sentinel to an error without changing its message.
type kindError struct {
	kind error
	err  error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.kind, e.err} }

// WithKind returns err marked with the sentinel kind; a nil err stays nil
// and a nil kind leaves err as it is.
func WithKind(kind, err error) error {
	if err == nil || kind == nil {
		return err
	}
	return &kindError{kind: kind, err: err}
}

// ClassifyLocal marks errors of local filesystem operations: a full disk
// or quota becomes ErrNoSpace.
func ClassifyLocal(err error) error {
	if err != nil && isNoSpace(err) && !errors.Is(err, ErrNoSpace) {
		return WithKind(ErrNoSpace, err)
	}
	return err
}
