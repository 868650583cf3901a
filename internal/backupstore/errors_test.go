package backupstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

func TestReasonAndRetryable(t *testing.T) {
	netErr := &url.Error{Op: "Put", URL: "http://127.0.0.1:1/b/k", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	cases := []struct {
		name      string
		err       error
		reason    moverprotocol.Reason
		retryable bool
	}{
		{"not found", fmt.Errorf("get: %w", ErrNotFound), "NotFound", false},
		{"already exists", ErrAlreadyExists, "AlreadyExists", false},
		{"access denied", WithKind(ErrAccessDenied, errors.New("InvalidAccessKeyId")), "AccessDenied", false},
		{"bucket", WithKind(ErrBucketNotFound, errors.New("NoSuchBucket")), "BucketNotFound", false},
		{"encryption", WithKind(ErrEncryption, errors.New("InvalidRequest")), "EncryptionError", false},
		{"5xx", WithKind(ErrUnavailable, errors.New("InternalError")), "Unavailable", true},
		{"checksum", ErrChecksumMismatch, "ChecksumMismatch", false},
		{"corrupt", ErrCorruptArchive, "CorruptArchive", false},
		{"format", ErrUnknownFormat, "UnknownFormat", false},
		{"unsafe", ErrUnsafePath, "UnsafePath", false},
		{"not empty", ErrTargetNotEmpty, "TargetNotEmpty", false},
		{"no space sentinel", ErrNoSpace, "NoSpace", false},
		{"ENOSPC", ClassifyLocal(fmt.Errorf("write: %w", syscall.ENOSPC)), "NoSpace", false},
		{"EDQUOT unclassified", fmt.Errorf("write: %w", syscall.EDQUOT), "NoSpace", false},
		{"source changed", ErrSourceChanged, "SourceChanged", true},
		{"invalid", ErrInvalidArgument, "InvalidArgument", false},
		{"network", netErr, "Unavailable", true},
		{"reset", fmt.Errorf("read: %w", syscall.ECONNRESET), "Unavailable", true},
		{"canceled", context.Canceled, "Canceled", false},
		{"deadline", context.DeadlineExceeded, "DeadlineExceeded", true},
		{"dial timeout", fmt.Errorf("put: %w", &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}), "Unavailable", true},
		{"dial canceled", &net.OpError{Op: "dial", Net: "tcp", Err: context.Canceled}, "Canceled", false},
		{"other", io.ErrShortWrite, "Internal", false},
		// A checksum failure found while a download also broke is not
		// worth retrying.
		{"checksum wins", fmt.Errorf("%w (decoding stopped at: %w)", ErrChecksumMismatch, netErr), "ChecksumMismatch", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Reason(c.err); got != c.reason {
				t.Errorf("Reason = %q, want %q", got, c.reason)
			}
			if got := Retryable(c.err); got != c.retryable {
				t.Errorf("Retryable = %v, want %v", got, c.retryable)
			}
		})
	}
	if Reason(nil) != "" || Retryable(nil) {
		t.Error("nil error must have no reason and not be retryable")
	}
}

func TestWithKindKeepsMessage(t *testing.T) {
	base := errors.New("s3 get s3://b/k: NoSuchKey")
	err := WithKind(ErrNotFound, base)
	if err.Error() != base.Error() || !errors.Is(err, ErrNotFound) || !errors.Is(err, base) {
		t.Fatalf("withKind = %v", err)
	}
	var wrapped *kindError
	if errors.As(WithKind(nil, base), &wrapped) || WithKind(ErrNotFound, nil) != nil {
		t.Fatal("withKind must leave nil kinds and nil errors alone")
	}
}

func TestUntrustedCertificateIsNotRetryable(t *testing.T) {
	err := &url.Error{Op: "Get", URL: "https://s3.example/b", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}
	if Retryable(err) || Reason(err) != "Internal" {
		t.Fatalf("Retryable = %v, Reason = %q", Retryable(err), Reason(err))
	}
}
