package backupstore

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/encrypt"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// customerKeyBytes is the size of an SSE-C key: AES-256's.
const customerKeyBytes = 32

// maxCustomerKeyFileBytes bounds what is read of an SSE-C key file, far
// above any encoding of a key.
const maxCustomerKeyFileBytes = 4 << 10

// S3Encryption is the server-side encryption of an S3Store: what Put asks
// the store to encrypt with and, for SSE-C, the key every read of an
// object must present again.
type S3Encryption struct {
	// Type is "" (none), moverprotocol.SSES3, SSEKMS or SSEC.
	Type string
	// KMSKeyID is SSE-KMS's key.
	KMSKeyID string
	// CustomerKey is SSE-C's key: 32 bytes, or their base64 encoding.
	CustomerKey []byte
	// CustomerKeyFile is a file holding CustomerKey (a mounted Secret's
	// key), read by NewS3Store.
	CustomerKeyFile string
}

// sseOptions are the encryption headers of an S3Store's requests: write
// for uploads, read for downloads and stats (SSE-C only: the store
// decrypts SSE-S3 and SSE-KMS objects unasked).
type sseOptions struct {
	write, read encrypt.ServerSide
}

// customerKeyed reports whether reads present an SSE-C key.
func (o sseOptions) customerKeyed() bool { return o.read != nil }

func (o sseOptions) put(opts minio.PutObjectOptions) minio.PutObjectOptions {
	opts.ServerSideEncryption = o.write
	return opts
}

func (o sseOptions) get() minio.GetObjectOptions {
	return minio.GetObjectOptions{ServerSideEncryption: o.read}
}

// options validates e and builds its headers; secure says the endpoint is
// https, without which SSE-C would send the key in the clear. Its errors
// never quote a key.
func (e S3Encryption) options(secure bool) (sseOptions, error) {
	if e.Type != moverprotocol.SSEKMS && e.KMSKeyID != "" {
		return sseOptions{}, fmt.Errorf("%w: s3 encryption: a KMS key id goes with %s only", ErrInvalidArgument, moverprotocol.SSEKMS)
	}
	if e.Type != moverprotocol.SSEC && (len(e.CustomerKey) > 0 || e.CustomerKeyFile != "") {
		return sseOptions{}, fmt.Errorf("%w: s3 encryption: a customer key goes with %s only", ErrInvalidArgument, moverprotocol.SSEC)
	}
	switch e.Type {
	case "":
		return sseOptions{}, nil
	case moverprotocol.SSES3:
		return sseOptions{write: encrypt.NewSSE()}, nil
	case moverprotocol.SSEKMS:
		if e.KMSKeyID == "" {
			return sseOptions{}, fmt.Errorf("%w: s3 encryption %s needs a KMS key id", ErrInvalidArgument, moverprotocol.SSEKMS)
		}
		sse, err := encrypt.NewSSEKMS(e.KMSKeyID, nil)
		if err != nil {
			return sseOptions{}, fmt.Errorf("%w: s3 encryption %s: %w", ErrInvalidArgument, moverprotocol.SSEKMS, err)
		}
		return sseOptions{write: sse}, nil
	case moverprotocol.SSEC:
		if !secure {
			return sseOptions{}, fmt.Errorf("%w: s3 encryption %s sends the key with every request: the endpoint must be https", ErrInvalidArgument, moverprotocol.SSEC)
		}
		key, err := e.customerKey()
		if err != nil {
			return sseOptions{}, err
		}
		sse, err := encrypt.NewSSEC(key)
		if err != nil {
			return sseOptions{}, fmt.Errorf("%w: s3 encryption %s: %w", ErrInvalidArgument, moverprotocol.SSEC, err)
		}
		return sseOptions{write: sse, read: sse}, nil
	}
	return sseOptions{}, fmt.Errorf("%w: s3 encryption %q: want %s, %s or %s", ErrInvalidArgument, e.Type,
		moverprotocol.SSES3, moverprotocol.SSEKMS, moverprotocol.SSEC)
}

// customerKey is the SSE-C key, read from CustomerKeyFile when set.
func (e S3Encryption) customerKey() ([]byte, error) {
	raw := e.CustomerKey
	if e.CustomerKeyFile != "" {
		f, err := os.Open(e.CustomerKeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: s3 encryption key file: %w", ErrInvalidArgument, err)
		}
		defer func() { _ = f.Close() }()
		var buf bytes.Buffer
		if _, err := buf.ReadFrom(io.LimitReader(f, maxCustomerKeyFileBytes+1)); err != nil {
			return nil, fmt.Errorf("%w: s3 encryption key file: %w", ErrInvalidArgument, err)
		}
		raw = buf.Bytes()
	}
	return decodeCustomerKey(raw)
}

// decodeCustomerKey accepts 32 bytes as they are, or their base64 encoding
// (standard alphabet, padded or not), around which white space (the
// newline of `openssl rand -base64 32 >key`) is ignored.
func decodeCustomerKey(raw []byte) ([]byte, error) {
	if len(raw) == customerKeyBytes {
		return raw, nil
	}
	text := strings.TrimSpace(string(raw))
	key, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(text, "="))
	if err != nil || len(key) != customerKeyBytes {
		return nil, fmt.Errorf("%w: the s3 encryption key holds %d bytes: an SSE-C key is %d bytes, or their base64 encoding (44 characters)",
			ErrInvalidArgument, len(raw), customerKeyBytes)
	}
	return key, nil
}
