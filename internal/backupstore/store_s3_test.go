package backupstore

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

const testBucket = "backups"

// s3Env serves credentials to newS3Store without touching the process
// environment.
func s3Env(id, secret string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		switch name {
		case moverprotocol.EnvAccessKeyID:
			return id, true
		case moverprotocol.EnvSecretAccessKey:
			return secret, true
		}
		return "", false
	}
}

func newTestS3Store(t *testing.T, srv *s3server.Server, cfg S3Config) *S3Store {
	t.Helper()
	cfg.Endpoint = cmp.Or(cfg.Endpoint, srv.Endpoint)
	cfg.Bucket = cmp.Or(cfg.Bucket, testBucket)
	cfg.PathStyle = true
	cfg.CAFile = cmp.Or(cfg.CAFile, srv.CAFile)
	s, err := newS3Store(cfg, s3Env(srv.AccessKey, srv.SecretKey))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// randomReader yields n pseudo-random bytes and hides its length, like the
// archive stream.
func randomReader(seed uint64, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed)}), n)
}

func TestS3Store(t *testing.T) {
	srv := s3server.Start(t, testBucket)
	ctx := context.Background()
	s := newTestS3Store(t, srv, S3Config{Prefix: "/team-a/"})

	storetest.PutBytes(t, s, "echo/b1/manifest.json", []byte(`{"m":1}`))
	storetest.PutBytes(t, s, "echo/b2/manifest.json", []byte(`{"m":2}`))
	// 40 MiB of unknown length: a multipart upload of three 16 MiB parts.
	const big = 40 << 20
	if err := s.Put(ctx, "echo/b1/data.tar.gz", randomReader(1, big)); err != nil {
		t.Fatal(err)
	}
	want := sha256.New()
	_, _ = io.Copy(want, randomReader(1, big))
	r, err := s.Get(ctx, "echo/b1/data.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, r)
	if err != nil || n != big || !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatalf("read back %d bytes (%v), content equal: %v", n, err, bytes.Equal(got.Sum(nil), want.Sum(nil)))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The prefix is part of the object name.
	if _, err := srv.Client(t).StatObject(ctx, testBucket, "team-a/echo/b1/manifest.json", minio.StatObjectOptions{}); err != nil {
		t.Errorf("object not stored under the prefix: %v", err)
	}
	if s.Location("echo/b1") != "s3://backups/team-a/echo/b1" {
		t.Errorf("Location = %s", s.Location("echo/b1"))
	}
	info, err := s.Stat(ctx, "echo/b1/data.tar.gz")
	if err != nil || info.Size != big || info.Key != "echo/b1/data.tar.gz" {
		t.Errorf("Stat = %+v, %v", info, err)
	}
	list, err := s.List(ctx, "echo/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list {
		keys = append(keys, o.Key)
	}
	if strings.Join(keys, ",") != "echo/b1/data.tar.gz,echo/b1/manifest.json,echo/b2/manifest.json" {
		t.Errorf("List = %v", keys)
	}
	if err := s.Delete(ctx, "echo/b2/manifest.json"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "echo/b2/manifest.json"); err != nil {
		t.Errorf("deleting a missing object: %v", err)
	}
	for name, err := range map[string]error{
		"get":  func() error { _, err := s.Get(ctx, "echo/b2/manifest.json"); return err }(),
		"stat": func() error { _, err := s.Stat(ctx, "echo/b2/manifest.json"); return err }(),
	} {
		if !errors.Is(err, ErrNotFound) || Retryable(err) {
			t.Errorf("%s of a missing object = %v, want ErrNotFound", name, err)
		}
	}
}

// A Put whose source fails after some parts were uploaded returns the
// source's error and leaves neither an object nor parts behind.
func TestS3StoreFailedPutLeavesNothing(t *testing.T) {
	srv := s3server.Start(t, testBucket)
	ctx := context.Background()
	s := newTestS3Store(t, srv, S3Config{})
	boom := errors.New("producer failed")
	r := io.MultiReader(randomReader(2, 40<<20), iotest.ErrReader(boom))
	if err := s.Put(ctx, "k/data.tar.gz", r); !errors.Is(err, boom) {
		t.Fatalf("Put = %v, want the source's error", err)
	}
	if _, err := s.Stat(ctx, "k/data.tar.gz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Stat after a failed Put = %v, want ErrNotFound", err)
	}
	for u := range srv.Client(t).ListIncompleteUploads(ctx, testBucket, "", true) {
		t.Errorf("incomplete upload left behind: %+v", u)
	}
}

// TestS3StoreAbortIncompleteUpload: the parts a killed mover left behind
// are removed, those of other keys kept.
func TestS3StoreAbortIncompleteUpload(t *testing.T) {
	srv := s3server.Start(t, testBucket)
	ctx := context.Background()
	s := newTestS3Store(t, srv, S3Config{Prefix: "p"})
	core := minio.Core{Client: srv.Client(t)}
	for _, object := range []string{"p/k/data.tar.gz", "p/other/data.tar.gz"} {
		if _, err := core.NewMultipartUpload(ctx, testBucket, object, minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AbortIncompleteUpload(ctx, "k/data.tar.gz"); err != nil {
		t.Fatal(err)
	}
	var left []string
	for u := range srv.Client(t).ListIncompleteUploads(ctx, testBucket, "", true) {
		left = append(left, u.Key)
	}
	if !slices.Equal(left, []string{"p/other/data.tar.gz"}) {
		t.Errorf("incomplete uploads left: %v, want only the other key's", left)
	}
}

func TestS3StoreErrors(t *testing.T) {
	srv := s3server.Start(t, testBucket)
	ctx := context.Background()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + closed.Addr().String()
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	const wrongSecret = "wrong-secret-0123456789"
	cases := []struct {
		name      string
		cfg       S3Config
		env       func(string) (string, bool)
		want      error
		retryable bool
		status    int
	}{
		{"wrong secret", S3Config{}, s3Env(srv.AccessKey, wrongSecret), ErrAccessDenied, false, 403},
		{"unknown access key", S3Config{}, s3Env("nobody", wrongSecret), ErrAccessDenied, false, 403},
		{"missing bucket", S3Config{Bucket: "no-such-bucket"}, nil, ErrBucketNotFound, false, 404},
		{"unreachable", S3Config{Endpoint: unreachable, MaxRetries: 1}, nil, ErrUnavailable, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Endpoint = cmp.Or(cfg.Endpoint, srv.Endpoint)
			cfg.Bucket = cmp.Or(cfg.Bucket, testBucket)
			cfg.PathStyle = true
			env := c.env
			if env == nil {
				env = s3Env(srv.AccessKey, srv.SecretKey)
			}
			s, err := newS3Store(cfg, env)
			if err != nil {
				t.Fatal(err)
			}
			ops := map[string]error{
				"put":  s.Put(ctx, "k/manifest.json", strings.NewReader("x")),
				"get":  func() error { _, err := s.Get(ctx, "k/manifest.json"); return err }(),
				"list": func() error { _, err := s.List(ctx, "k/"); return err }(),
			}
			// A HEAD answer has no body to say which of bucket or key is
			// missing; only MinIO's own header tells, so Stat is checked
			// where the answer is unambiguous.
			if !errors.Is(c.want, ErrBucketNotFound) {
				ops["stat"] = func() error { _, err := s.Stat(ctx, "k/manifest.json"); return err }()
			}
			for op, err := range ops {
				if !errors.Is(err, c.want) || Retryable(err) != c.retryable {
					t.Errorf("%s = %v; want %v, retryable %v", op, err, c.want, c.retryable)
				}
				if got := HTTPStatus(err); got != c.status {
					t.Errorf("HTTPStatus(%s error) = %d, want %d", op, got, c.status)
				}
				if err != nil && (strings.Contains(err.Error(), wrongSecret) || strings.Contains(err.Error(), srv.SecretKey)) {
					t.Errorf("%s error reveals a secret: %v", op, err)
				}
			}
		})
	}
}

func TestS3StoreTLS(t *testing.T) {
	srv := s3server.StartTLS(t, testBucket)
	ctx := context.Background()
	s := newTestS3Store(t, srv, S3Config{})
	storetest.PutBytes(t, s, "tls/object", []byte("over https"))
	if got := string(storetest.GetBytes(t, s, "tls/object")); got != "over https" {
		t.Errorf("Get = %q", got)
	}
	// Without the CA the server is not trusted, and retrying cannot help.
	untrusted, err := newS3Store(S3Config{Endpoint: srv.Endpoint, Bucket: testBucket, PathStyle: true, MaxRetries: 1}, s3Env(srv.AccessKey, srv.SecretKey))
	if err != nil {
		t.Fatal(err)
	}
	_, err = untrusted.Stat(ctx, "tls/object")
	if err == nil || Retryable(err) || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Stat without the CA = %v; want a non-retryable certificate error", err)
	}
}

// The caller's Transport sees the transport the store set up, TLS roots
// included, and what it sets there is what the store's requests use.
func TestS3ConfigTransport(t *testing.T) {
	ca, err := testcerts.NewCA("store test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	errDialled := errors.New("dialled through the caller's transport")
	var dialled []string
	var sawRoots bool
	s, err := newS3Store(S3Config{
		Endpoint: "https://s3.example.test", Bucket: testBucket, CABundle: ca.CertPEM(), MaxRetries: 1,
		Transport: func(tr *http.Transport) {
			sawRoots = tr.TLSClientConfig != nil && tr.TLSClientConfig.RootCAs != nil
			tr.Proxy = nil
			tr.DialContext = func(_ context.Context, _, address string) (net.Conn, error) {
				dialled = append(dialled, address)
				return nil, errDialled
			}
		},
	}, s3Env("AKID", "secret"))
	if err != nil {
		t.Fatal(err)
	}
	if !sawRoots {
		t.Error("the caller's Transport ran before the store set its TLS roots")
	}
	_, err = s.Stat(context.Background(), "k/manifest.json")
	if !errors.Is(err, errDialled) {
		t.Errorf("Stat = %v, want the caller's dial error", err)
	}
	if !slices.Equal(dialled, []string{"backups.s3.example.test:443"}) {
		t.Errorf("dialled %v", dialled)
	}
	if HTTPStatus(err) != 0 || HTTPStatus(nil) != 0 {
		t.Error("an error without an S3 answer has an HTTP status")
	}
}

func TestNewS3StoreValidates(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	ok := S3Config{Endpoint: "https://s3.example.com", Bucket: "b"}
	env := s3Env("AKID", "the-secret-value")
	cases := map[string]struct {
		mutate func(*S3Config)
		env    func(string) (string, bool)
	}{
		"no scheme":       {func(c *S3Config) { c.Endpoint = "s3.example.com" }, env},
		"ftp":             {func(c *S3Config) { c.Endpoint = "ftp://s3.example.com" }, env},
		"path":            {func(c *S3Config) { c.Endpoint = "https://s3.example.com/bucket" }, env},
		"credentials":     {func(c *S3Config) { c.Endpoint = "https://AKID:the-secret-value@s3.example.com" }, env},
		"no bucket":       {func(c *S3Config) { c.Bucket = "" }, env},
		"bad prefix":      {func(c *S3Config) { c.Prefix = "a/../b" }, env},
		"missing CA file": {func(c *S3Config) { c.CAFile = filepath.Join(dir, "missing") }, env},
		"CA file not PEM": {func(c *S3Config) { c.CAFile = notPEM }, env},
		"no credentials":  {func(*S3Config) {}, func(string) (string, bool) { return "", false }},
		"no secret":       {func(*S3Config) {}, s3Env("AKID", "")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := ok
			c.mutate(&cfg)
			_, err := newS3Store(cfg, c.env)
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("newS3Store = %v, want ErrInvalidArgument", err)
			}
			if strings.Contains(err.Error(), "the-secret-value") {
				t.Errorf("error reveals the secret: %v", err)
			}
		})
	}
	if _, err := newS3Store(ok, env); err != nil {
		t.Errorf("valid config: %v", err)
	}
}
