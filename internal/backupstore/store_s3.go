package backupstore

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// Defaults of S3Config.
const (
	// DefaultS3PartSize is the multipart upload part size. Put buffers
	// Threads parts in memory, and S3 allows 10,000 parts, so an archive may
	// reach 10,000 × PartSize (156 GiB at 16 MiB).
	DefaultS3PartSize = 16 << 20
	// DefaultS3Threads is how many parts are uploaded concurrently. One
	// keeps the buffer at one part; a second buys nothing when compression
	// is the bottleneck, as it is on two cores.
	DefaultS3Threads = 1
	// DefaultS3MaxRetries bounds the client's own retries of a request; the
	// Job's backoff retries the whole operation after that.
	DefaultS3MaxRetries = 3
)

// abortTimeout bounds the cleanup of an unfinished multipart upload.
const abortTimeout = 30 * time.Second

// maxS3ResponseHeaderBytes bounds the headers of a response.
const maxS3ResponseHeaderBytes = 256 << 10

// Bounds of what Walk takes of a listing: S3 refuses longer keys, and an
// ETag is a checksum, at most a few dozen bytes.
const (
	maxS3KeyLength  = 1024
	maxS3ETagLength = 128
)

// S3Config configures an S3Store. Credentials are not part of it: they come
// from the environment only: keys (moverprotocol's EnvAccessKeyID,
// EnvSecretAccessKey and optionally EnvSessionToken), or a web identity
// token's file (EnvWebIdentityTokenFile, optionally with EnvRoleARN),
// exchanged at STSEndpoint.
type S3Config struct {
	// Endpoint is the service URL: http:// or https://host[:port].
	Endpoint string
	// Region defaults to moverprotocol.DefaultS3Region.
	Region string
	// Bucket must exist.
	Bucket string
	// Prefix is prepended to every key ("backups" puts key k at
	// backups/k).
	Prefix string
	// PathStyle addresses the bucket in the path (endpoint/bucket/key)
	// instead of the host name (bucket.endpoint/key).
	PathStyle bool
	// CAFile is a PEM bundle trusted in addition to the system roots.
	CAFile string
	// CABundle is a PEM bundle trusted in addition to the system roots,
	// for callers that hold it in memory; it goes with CAFile.
	CABundle []byte
	// Transport, when set, is given the HTTP transport of the store's
	// client once the store has set it up (TLS included): a caller that
	// decides where connections go sets its dialer and proxy there.
	Transport func(*http.Transport)
	// PartSize and Threads bound Put's memory to PartSize × Threads;
	// defaults DefaultS3PartSize and DefaultS3Threads.
	PartSize uint64
	Threads  int
	// MaxRetries defaults to DefaultS3MaxRetries.
	MaxRetries int
	// STSEndpoint is where a web identity token is exchanged for
	// credentials; Endpoint when empty (MinIO serves its STS there).
	STSEndpoint string
	// Encryption is the server-side encryption of the objects Put writes,
	// and the SSE-C key of those it reads.
	Encryption S3Encryption
}

// S3Store keeps objects in an S3 bucket through minio-go.
type S3Store struct {
	client   *minio.Client
	bucket   string
	prefix   string // "" or ending in "/"
	partSize uint64
	threads  int
	sse      sseOptions
}

var _ Store = (*S3Store)(nil)

// NewS3Store validates cfg, reads the credentials from the environment and
// returns a store. It does not contact the service.
func NewS3Store(cfg S3Config) (*S3Store, error) {
	return newS3Store(cfg, os.LookupEnv)
}

// NewS3StoreWithCredentials is NewS3Store with the credentials given
// rather than read from the environment: for a process that serves several
// stores.
func NewS3StoreWithCredentials(cfg S3Config, accessKeyID, secretAccessKey string) (*S3Store, error) {
	creds := map[string]string{moverprotocol.EnvAccessKeyID: accessKeyID, moverprotocol.EnvSecretAccessKey: secretAccessKey}
	return newS3Store(cfg, func(name string) (string, bool) {
		v, ok := creds[name]
		return v, ok
	})
}

// NewS3StoreFromEnv is NewS3Store with the credentials read through
// lookupEnv, under the names of moverprotocol's environment: for a process
// that reaches two stores, each with credentials of its own (a copy's
// destination reads them under moverprotocol.ToEnv's names).
func NewS3StoreFromEnv(cfg S3Config, lookupEnv func(string) (string, bool)) (*S3Store, error) {
	return newS3Store(cfg, lookupEnv)
}

func newS3Store(cfg S3Config, lookupEnv func(string) (string, bool)) (*S3Store, error) {
	host, secure, err := parseEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, fmt.Errorf("%w: s3 bucket is empty", ErrInvalidArgument)
	}
	prefix := strings.Trim(cfg.Prefix, "/")
	if prefix != "" {
		if err := CheckKey(prefix); err != nil {
			return nil, fmt.Errorf("s3 prefix: %w", err)
		}
		prefix += "/"
	}
	sse, err := cfg.Encryption.options(secure)
	if err != nil {
		return nil, err
	}
	transport, err := minio.DefaultTransport(secure)
	if err != nil {
		return nil, fmt.Errorf("s3 transport: %w", err)
	}
	// S3's headers are a few KiB (AWS allows 2 KiB of user metadata),
	// far below Go's default bound of 10 MiB.
	transport.MaxResponseHeaderBytes = maxS3ResponseHeaderBytes
	if cfg.CAFile != "" || len(cfg.CABundle) > 0 {
		pool, err := caPool(cfg.CAFile, cfg.CABundle)
		if err != nil {
			return nil, err
		}
		if transport.TLSClientConfig == nil {
			transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		transport.TLSClientConfig.RootCAs = pool
	}
	if cfg.Transport != nil {
		cfg.Transport(transport)
	}
	creds, err := envCredentials(lookupEnv, cmp.Or(cfg.STSEndpoint, cfg.Endpoint), &http.Client{Transport: boundedTransport{base: transport}})
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupDNS
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	client, err := minio.New(host, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Transport:    boundedTransport{base: transport},
		Region:       cmp.Or(cfg.Region, moverprotocol.DefaultS3Region),
		BucketLookup: lookup,
		MaxRetries:   cmp.Or(cfg.MaxRetries, DefaultS3MaxRetries),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: s3 client: %w", ErrInvalidArgument, err)
	}
	return &S3Store{
		client:   client,
		bucket:   cfg.Bucket,
		prefix:   prefix,
		partSize: cmp.Or(cfg.PartSize, DefaultS3PartSize),
		threads:  cmp.Or(cfg.Threads, DefaultS3Threads),
		sse:      sse,
	}, nil
}

// parseEndpoint accepts http(s)://host[:port] and nothing else. Its errors
// never quote the endpoint, which could carry credentials.
func parseEndpoint(endpoint string) (host string, secure bool, err error) {
	const want = "want http://host[:port] or https://host[:port]"
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("%w: s3 endpoint is not a URL (%s)", ErrInvalidArgument, want)
	}
	switch {
	case u.User != nil:
		return "", false, fmt.Errorf("%w: s3 endpoint must not contain credentials; set %s and %s", ErrInvalidArgument, moverprotocol.EnvAccessKeyID, moverprotocol.EnvSecretAccessKey)
	case u.Scheme != "http" && u.Scheme != "https":
		return "", false, fmt.Errorf("%w: s3 endpoint scheme %q: %s", ErrInvalidArgument, u.Scheme, want)
	case u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", false, fmt.Errorf("%w: s3 endpoint must be a bare host: %s", ErrInvalidArgument, want)
	}
	return u.Host, u.Scheme == "https", nil
}

// envCredentials are the credentials the environment gives: static keys
// (with a session token for temporary ones) or, without keys, a web
// identity token's file, which minio-go's IAM provider exchanges at
// stsEndpoint, over https only (AssumeRoleWithWebIdentity, as on EKS) through client,
// again before the credentials expire. Nothing else (no instance
// metadata service) is asked.
func envCredentials(lookupEnv func(string) (string, bool), stsEndpoint string, client *http.Client) (*credentials.Credentials, error) {
	id, _ := lookupEnv(moverprotocol.EnvAccessKeyID)
	secret, _ := lookupEnv(moverprotocol.EnvSecretAccessKey)
	token, _ := lookupEnv(moverprotocol.EnvSessionToken)
	tokenFile, _ := lookupEnv(moverprotocol.EnvWebIdentityTokenFile)
	switch {
	case id != "" && secret != "":
		return credentials.NewStaticV4(id, secret, token), nil
	case id == "" && secret == "" && tokenFile != "":
		_, secure, err := parseEndpoint(stsEndpoint)
		if err != nil {
			return nil, fmt.Errorf("s3 STS endpoint: %w", err)
		}
		if !secure {
			// The token is a bearer credential the real STS accepts.
			return nil, fmt.Errorf("%w: s3 STS endpoint: a web identity token goes only over https", ErrInvalidArgument)
		}
		iam := &credentials.IAM{Client: client, Endpoint: stsEndpoint}
		iam.EKSIdentity.TokenFile = tokenFile
		iam.EKSIdentity.RoleARN, _ = lookupEnv(moverprotocol.EnvRoleARN)
		return credentials.New(iam), nil
	}
	return nil, fmt.Errorf("%w: s3 credentials: set %s and %s, or %s (a web identity token's file)", ErrInvalidArgument,
		moverprotocol.EnvAccessKeyID, moverprotocol.EnvSecretAccessKey, moverprotocol.EnvWebIdentityTokenFile)
}

// caPool is the system roots with the certificates of file and bundle.
func caPool(file string, bundle []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if file != "" {
		pem, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%w: s3 CA file: %w", ErrInvalidArgument, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: s3 CA file %s holds no PEM certificate", ErrInvalidArgument, file)
		}
	}
	if len(bundle) > 0 && !pool.AppendCertsFromPEM(bundle) {
		return nil, fmt.Errorf("%w: the s3 CA bundle holds no PEM certificate", ErrInvalidArgument)
	}
	return pool, nil
}

func (s *S3Store) object(key string) string { return s.prefix + key }

// Location returns s3://bucket/object.
func (s *S3Store) Location(key string) string {
	return "s3://" + s.bucket + "/" + s.object(key)
}

// Put implements Store. A reader that reports its remaining length (such as
// *bytes.Reader) is uploaded in one request when it fits a part; anything
// else is a multipart upload of PartSize parts, Threads at a time. A failed
// upload is aborted so that no parts are left behind. Errors returned by r
// are passed through unchanged.
func (s *S3Store) Put(ctx context.Context, key string, r io.Reader) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	size := int64(-1)
	if l, ok := r.(interface{ Len() int }); ok {
		size = int64(l.Len())
	}
	src := &trackingReader{r: r}
	_, err := s.client.PutObject(ctx, s.bucket, s.object(key), src, size, s.sse.put(minio.PutObjectOptions{
		ContentType:           "application/octet-stream",
		PartSize:              s.partSize,
		NumThreads:            uint(s.threads),
		ConcurrentStreamParts: s.threads > 1,
	}))
	if err == nil {
		return nil
	}
	s.abortUpload(key)
	if src.err != nil {
		return src.err
	}
	return s.classify("put", key, err)
}

// abortUpload removes the parts of an unfinished multipart upload of key.
// It runs on its own context: the caller's may be what ended the upload.
func (s *S3Store) abortUpload(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	_ = s.client.RemoveIncompleteUpload(ctx, s.bucket, s.object(key))
}

// AbortIncompleteUpload removes the parts of every unfinished multipart
// upload of key: those of a mover killed mid-upload, which no error path
// could abort.
func (s *S3Store) AbortIncompleteUpload(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := s.client.RemoveIncompleteUpload(ctx, s.bucket, s.object(key)); err != nil {
		return s.classify("abort incomplete upload", key, err)
	}
	return nil
}

// trackingReader remembers the first read error of its source.
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && t.err == nil {
		t.err = err
	}
	return n, err
}

// Get implements Store. Read errors of the returned reader are classified
// like the store's other errors.
func (s *S3Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, s.object(key), s.sse.get())
	if err != nil {
		return nil, s.classify("get", key, err)
	}
	// The first Stat sends the GET and keeps its body for the reads.
	if _, err := obj.Stat(); err != nil {
		_ = obj.Close()
		return nil, s.classify("get", key, err)
	}
	return &s3Reader{obj: obj, store: s, key: key}, nil
}

type s3Reader struct {
	obj   *minio.Object
	store *S3Store
	key   string
}

func (r *s3Reader) Read(p []byte) (int, error) {
	n, err := r.obj.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = r.store.classify("read", r.key, err)
	}
	return n, err
}

func (r *s3Reader) Close() error { return r.obj.Close() }

// Stat implements Store.
func (s *S3Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	if err := CheckKey(key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := s.client.StatObject(ctx, s.bucket, s.object(key), s.sse.get())
	if err != nil {
		return ObjectInfo{}, s.classify("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified, ETag: info.ETag}, nil
}

// Delete implements Store.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	err := s.client.RemoveObject(ctx, s.bucket, s.object(key), minio.RemoveObjectOptions{})
	if err != nil && !errors.Is(s.classify("delete", key, err), ErrNotFound) {
		return s.classify("delete", key, err)
	}
	return nil
}

// List implements Store.
func (s *S3Store) List(ctx context.Context, prefix string) ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := s.Walk(ctx, prefix, func(o ObjectInfo) error {
		out = append(out, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Walk implements Store, by key, one page of the listing in memory at a
// time. A key longer than S3 allows is not an object: it is skipped. An
// ETag longer than any checksum is dropped.
//
// Under the bounds of a listing (ListOptions), the walk stops with
// errListingCut once it has requested their number of pages.
func (s *S3Store) Walk(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if max := requestBoundsFrom(ctx).maxListPages; max > 0 {
		ctx = context.WithValue(ctx, pageBudgetKey{}, &pageBudget{max: max, cancel: cancel})
	}
	objects := s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.object(prefix), Recursive: true})
	defer func() {
		// minio-go's lister sends its last word once the context ends;
		// drained, it exits.
		cancel(nil)
		for range objects {
		}
	}()
	for obj := range objects {
		if obj.Err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errListingCut) {
				return fmt.Errorf("s3 list %s: %w", s.Location(prefix), cause)
			}
			return s.classify("list", prefix, obj.Err)
		}
		if len(obj.Key) > maxS3KeyLength {
			continue
		}
		info := ObjectInfo{Key: strings.TrimPrefix(obj.Key, s.prefix), Size: obj.Size, ModTime: obj.LastModified, ETag: obj.ETag}
		if len(info.ETag) > maxS3ETagLength {
			info.ETag = ""
		}
		if err := fn(info); err != nil {
			return err
		}
	}
	return nil
}

// classify wraps a minio-go error with the operation, the object's location
// and the matching sentinel. The service's error code and message are kept;
// neither holds credentials.
func (s *S3Store) classify(op, key string, err error) error {
	loc := s.Location(key)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("s3 %s %s: %w", op, loc, err)
	}
	var sts credentials.ErrorResponse
	if errors.As(err, &sts) {
		return WithKind(stsErrorKind(sts.STSError.Code),
			fmt.Errorf("s3 %s %s: the STS did not exchange the web identity token: %s: %w", op, loc, sts.STSError.Code, err))
	}
	resp := minio.ToErrorResponse(err)
	kind := s3ErrorKind(resp)
	if kind == nil && (isNetworkError(err) || errors.Is(err, io.ErrUnexpectedEOF)) {
		kind = ErrUnavailable
	}
	if errors.Is(kind, ErrAccessDenied) && s.sse.customerKeyed() && readsObject(op) {
		// The store refuses a read with the wrong SSE-C key as it refuses
		// wrong credentials: say which is the likelier.
		kind, err = ErrEncryption, fmt.Errorf("%w (an object written with another SSE-C key is refused so)", err)
	}
	if resp.Code != "" {
		err = fmt.Errorf("s3 %s %s: %s (HTTP %d): %w", op, loc, resp.Code, resp.StatusCode, err)
	} else {
		err = fmt.Errorf("s3 %s %s: %w", op, loc, err)
	}
	return WithKind(kind, err)
}

// HTTPStatus is the HTTP status of the S3 answer err reports, or 0 when
// err carries none (the service was not reached, or its answer was not
// an S3 error).
func HTTPStatus(err error) int {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		return resp.StatusCode
	}
	return 0
}

// stsErrorKind maps the code of an STS refusal to a sentinel: the STS
// failing is unavailable, anything else (an invalid, expired or foreign
// token, a role it may not assume) is access denied.
func stsErrorKind(code string) error {
	switch code {
	case "InternalError", "ServiceUnavailable", "Throttling", "SlowDown":
		return ErrUnavailable
	}
	return ErrAccessDenied
}

// readsObject reports whether the S3Store operation op reads an object,
// which SSE-C lets only its key do.
func readsObject(op string) bool { return op == "get" || op == "stat" || op == "read" }

// s3ErrorKind maps an S3 error response to a sentinel, or nil.
func s3ErrorKind(resp minio.ErrorResponse) error {
	if isEncryptionError(resp) {
		return ErrEncryption
	}
	switch resp.Code {
	case "":
		return nil
	case "NoSuchKey", "NoSuchVersion":
		return ErrNotFound
	case "NoSuchBucket":
		return ErrBucketNotFound
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken",
		"ExpiredToken", "TokenRefreshRequired", "AllAccessDisabled", "AccountProblem", "InvalidSecurity":
		return ErrAccessDenied
	case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout", "XMinioServerNotInitialized":
		return ErrUnavailable
	}
	switch {
	case resp.StatusCode == 401 || resp.StatusCode == 403:
		return ErrAccessDenied
	case resp.StatusCode == 404:
		return ErrNotFound
	case resp.StatusCode >= 500:
		return ErrUnavailable
	}
	return nil
}

// isEncryptionError reports whether the store refused a request for its
// server-side encryption: an SSE-C object read without its key, encryption
// headers an object does not take, a KMS key the store does not know or a
// store without a KMS. S3 and MinIO give these the codes of other errors
// (InvalidRequest, InvalidArgument, NotImplemented), with these messages.
func isEncryptionError(resp minio.ErrorResponse) bool {
	if code := strings.ToLower(resp.Code); strings.HasPrefix(code, "kms.") || strings.HasPrefix(code, "kms:") {
		// AWS's KMS.NotFoundException..., MinIO's kms:KeyNotFound...
		return true
	}
	switch resp.Code {
	case "InvalidRequest", "InvalidArgument", "InvalidEncryptionAlgorithmError", "NotImplemented":
		msg := strings.ToLower(resp.Message)
		return strings.Contains(msg, "server side encryption") || strings.Contains(msg, "encryption parameters") ||
			strings.Contains(msg, "kms") || strings.Contains(msg, "sse-c") || strings.Contains(msg, "customer provided key")
	}
	return false
}
