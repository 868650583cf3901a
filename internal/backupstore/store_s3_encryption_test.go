package backupstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

// testCustomerKey is an SSE-C key of 32 bytes; otherCustomerKey another.
var (
	testCustomerKey  = bytes.Repeat([]byte{0x5a}, customerKeyBytes)
	otherCustomerKey = bytes.Repeat([]byte{0xa5}, customerKeyBytes)
)

func TestDecodeCustomerKey(t *testing.T) {
	raw := []byte("0123456789abcdef0123456789abcdef")
	encoded := base64.StdEncoding.EncodeToString(raw)
	cases := []struct {
		name  string
		input string
		ok    bool
	}{
		{"32 bytes", string(raw), true},
		{"their base64", encoded, true},
		{"their base64 and a newline", encoded + "\n", true},
		{"their base64 unpadded", strings.TrimRight(encoded, "="), true},
		{"16 bytes", string(raw[:16]), false},
		{"the base64 of 16 bytes", base64.StdEncoding.EncodeToString(raw[:16]), false},
		{"33 bytes", string(raw) + "x", false},
		{"text that is no base64", strings.Repeat("key!", 11), false},
		{"nothing", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key, err := decodeCustomerKey([]byte(tc.input))
			if !tc.ok {
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("err = %v, want ErrInvalidArgument", err)
				}
				if len(tc.input) > 4 && strings.Contains(err.Error(), strings.TrimSpace(tc.input)) {
					t.Errorf("the error quotes the key: %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(key, raw) {
				t.Fatalf("key = %q, %v; want %q", key, err, raw)
			}
		})
	}
}

func TestS3EncryptionOptionsRefuse(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, testCustomerKey, 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		e      S3Encryption
		secure bool
		want   string
	}{
		{"SSE-C over http", S3Encryption{Type: moverprotocol.SSEC, CustomerKey: testCustomerKey}, false, "the endpoint must be https"},
		{"SSE-C without a key", S3Encryption{Type: moverprotocol.SSEC}, true, "an SSE-C key is 32 bytes"},
		{"SSE-C with a missing key file", S3Encryption{Type: moverprotocol.SSEC, CustomerKeyFile: keyFile + ".missing"}, true, "key file"},
		{"SSE-KMS without a key id", S3Encryption{Type: moverprotocol.SSEKMS}, true, "needs a KMS key id"},
		{"a KMS key without SSE-KMS", S3Encryption{Type: moverprotocol.SSES3, KMSKeyID: "k"}, true, "goes with SSE-KMS only"},
		{"a customer key without SSE-C", S3Encryption{CustomerKeyFile: keyFile}, true, "goes with SSE-C only"},
		{"an unknown type", S3Encryption{Type: "AES256"}, true, `"AES256": want SSE-S3, SSE-KMS or SSE-C`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.e.options(tc.secure)
			if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidArgument saying %q", err, tc.want)
			}
		})
	}
	if o, err := (S3Encryption{Type: moverprotocol.SSEC, CustomerKeyFile: keyFile}).options(true); err != nil || !o.customerKeyed() {
		t.Errorf("SSE-C from a key file: %+v, %v", o, err)
	}
}

// plaintextMarker fills the objects whose encryption at rest is checked:
// it must not appear in the server's files.
const plaintextMarker = "echo-plaintext-marker-2f81c0"

// TestS3StoreEncryptsAtRest writes objects with each server-side
// encryption to a real S3 service (MinIO over TLS, with its built-in KMS),
// reads them back byte for byte, and finds their content nowhere in the
// service's files, where an unencrypted object's is.
func TestS3StoreEncryptsAtRest(t *testing.T) {
	srv := s3server.StartTLS(t, testBucket)
	ctx := context.Background()
	small := []byte(strings.Repeat(plaintextMarker, 64))
	cases := []struct {
		name   string
		e      S3Encryption
		header string // the response header that says how the object is encrypted
		want   string
	}{
		{"none", S3Encryption{}, "", ""},
		{"SSE-S3", S3Encryption{Type: moverprotocol.SSES3}, "X-Amz-Server-Side-Encryption", "AES256"},
		{"SSE-KMS", S3Encryption{Type: moverprotocol.SSEKMS, KMSKeyID: s3server.KMSKeyID}, "X-Amz-Server-Side-Encryption", "aws:kms"},
		{"SSE-C", S3Encryption{Type: moverprotocol.SSEC, CustomerKey: testCustomerKey}, "X-Amz-Server-Side-Encryption-Customer-Algorithm", "AES256"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "at-rest/" + strings.ToLower(tc.name)
			s := newTestS3Store(t, srv, S3Config{Prefix: prefix, Encryption: tc.e})
			// A small object in one request, and 40 MiB of unknown length
			// in a multipart upload.
			storetest.PutBytes(t, s, "b1/manifest.json", small)
			const big = 40 << 20
			if err := s.Put(ctx, "b1/data.tar.gz", markerReader(big)); err != nil {
				t.Fatal(err)
			}
			if got := storetest.GetBytes(t, s, "b1/manifest.json"); !bytes.Equal(got, small) {
				t.Errorf("read back %d bytes, not what was written", len(got))
			}
			if got := storetest.GetBytes(t, s, "b1/data.tar.gz"); len(got) != big || !bytes.Equal(got[:len(small)], small) {
				t.Errorf("read back %d bytes of the multipart object, not what was written", len(got))
			}
			info, err := s.Stat(ctx, "b1/data.tar.gz")
			if err != nil || info.Size != big {
				t.Errorf("Stat = %+v, %v", info, err)
			}
			if tc.header != "" {
				stat, err := s.client.StatObject(ctx, testBucket, s.object("b1/manifest.json"), s.sse.get())
				if err != nil {
					t.Fatal(err)
				}
				if got := stat.Metadata.Get(tc.header); got != tc.want {
					t.Errorf("%s: %q, want %q", tc.header, got, tc.want)
				}
			}
			stored := filesHolding(t, srv.DataDir, prefix, plaintextMarker)
			switch {
			case tc.e.Type == "" && !stored:
				t.Fatal("the unencrypted objects' content is not in the server's files: this test could not tell")
			case tc.e.Type != "" && stored:
				t.Error("the encrypted objects' content is in the server's files in the clear")
			}
		})
	}
}

// markerReader yields n bytes of plaintextMarker repeated, hiding its
// length like the archive stream.
func markerReader(n int) *strings.Reader {
	return strings.NewReader(strings.Repeat(plaintextMarker, n/len(plaintextMarker)+1)[:n])
}

// filesHolding reports whether a file of the server's data directory
// under the bucket's prefix holds marker.
func filesHolding(t *testing.T, dataDir, prefix, marker string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(filepath.Join(dataDir, testBucket, prefix), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || found {
			return err
		}
		b, err := os.ReadFile(path)
		found = err == nil && bytes.Contains(b, []byte(marker))
		return err
	})
	if err != nil {
		t.Fatalf("reading the server's files: %v", err)
	}
	return found
}

// TestS3StoreEncryptionRefusals: an SSE-C object cannot be read without its
// key or with another, and the store refuses a KMS key it does not know;
// each fails with ErrEncryption, which a person can act on.
func TestS3StoreEncryptionRefusals(t *testing.T) {
	srv := s3server.StartTLS(t, testBucket)
	ctx := context.Background()
	sseC := func(key []byte) S3Config {
		return S3Config{Prefix: "refusals", Encryption: S3Encryption{Type: moverprotocol.SSEC, CustomerKey: key}}
	}
	storetest.PutBytes(t, newTestS3Store(t, srv, sseC(testCustomerKey)), "b1/manifest.json", []byte(plaintextMarker))

	for name, cfg := range map[string]S3Config{
		"no key":      {Prefix: "refusals"},
		"another key": sseC(otherCustomerKey),
	} {
		t.Run(name, func(t *testing.T) {
			s := newTestS3Store(t, srv, cfg)
			_, err := s.Get(ctx, "b1/manifest.json")
			if !errors.Is(err, ErrEncryption) || Reason(err) != moverprotocol.ReasonEncryption || Retryable(err) {
				t.Errorf("Get: %v (reason %s), want a permanent ErrEncryption", err, Reason(err))
			}
			if strings.Contains(err.Error(), string(testCustomerKey)) || strings.Contains(err.Error(), string(otherCustomerKey)) {
				t.Error("the error quotes a key")
			}
			// Listing and deleting need no key.
			if objs, err := s.List(ctx, "b1/"); err != nil || len(objs) != 1 {
				t.Errorf("List = %v, %v", objs, err)
			}
		})
	}

	t.Run("an unknown KMS key", func(t *testing.T) {
		s := newTestS3Store(t, srv, S3Config{Prefix: "refusals-kms", Encryption: S3Encryption{Type: moverprotocol.SSEKMS, KMSKeyID: "no-such-key"}})
		err := s.Put(ctx, "b1/manifest.json", bytes.NewReader([]byte("{}")))
		if !errors.Is(err, ErrEncryption) {
			t.Errorf("Put: %v, want ErrEncryption", err)
		}
		if _, err := srv.Client(t).StatObject(ctx, testBucket, "refusals-kms/b1/manifest.json", minio.StatObjectOptions{}); err == nil {
			t.Error("the refused object was stored")
		}
	})
}

// TestS3ErrorKindOfEncryption: the answers S3 and MinIO give a request
// refused for its encryption, under the codes of other errors, are
// ErrEncryption; those codes' other answers are not.
func TestS3ErrorKindOfEncryption(t *testing.T) {
	cases := []struct {
		code, message string
		status        int
		want          error
	}{
		{"InvalidRequest", "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.", 400, ErrEncryption},
		{"InvalidRequest", "The encryption parameters are not applicable to this object.", 400, ErrEncryption},
		{"InvalidArgument", "Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.", 400, ErrEncryption},
		{"KMS.NotFoundException", "Invalid keyId", 400, ErrEncryption},
		{"kms:KeyNotFound", "key with given key ID does not exist", 404, ErrEncryption},
		{"NotImplemented", "Server side encryption specified but KMS is not configured", 501, ErrEncryption},
		{"InvalidRequest", "Missing required header for this request", 400, nil},
		{"NotImplemented", "A header you provided implies functionality that is not implemented", 501, ErrUnavailable},
		{"NoSuchKey", "The specified key does not exist.", 404, ErrNotFound},
		{"AccessDenied", "Access Denied.", 403, ErrAccessDenied},
	}
	for _, tc := range cases {
		got := s3ErrorKind(minio.ErrorResponse{Code: tc.code, Message: tc.message, StatusCode: tc.status})
		if !errors.Is(got, tc.want) || (got == nil) != (tc.want == nil) {
			t.Errorf("%s %q: %v, want %v", tc.code, tc.message, got, tc.want)
		}
	}
}

// TestEnvCredentials: keys (with a session token), or without keys a web
// identity token's file, and nothing else.
func TestEnvCredentials(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	const sts = "https://sts.example.test"
	cases := []struct {
		name   string
		env    func(string) (string, bool)
		sts    string
		static bool
		want   string // an error's, when not empty
	}{
		{"keys", env(moverprotocol.EnvAccessKeyID, "id", moverprotocol.EnvSecretAccessKey, "secret"), sts, true, ""},
		{"temporary keys", env(moverprotocol.EnvAccessKeyID, "id", moverprotocol.EnvSecretAccessKey, "secret", moverprotocol.EnvSessionToken, "t"), sts, true, ""},
		{"a web identity", env(moverprotocol.EnvWebIdentityTokenFile, "/token", moverprotocol.EnvRoleARN, "arn:aws:iam::1:role/r"), sts, false, ""},
		{"a web identity and an STS that is no URL", env(moverprotocol.EnvWebIdentityTokenFile, "/token"), "sts.example.test", false, "s3 STS endpoint"},
		{"a web identity and an STS over http", env(moverprotocol.EnvWebIdentityTokenFile, "/token"), "http://sts.example.test", false,
			"a web identity token goes only over https"},
		{"half the keys", env(moverprotocol.EnvAccessKeyID, "id"), sts, false, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_WEB_IDENTITY_TOKEN_FILE"},
		{"half the keys and a web identity", env(moverprotocol.EnvAccessKeyID, "id", moverprotocol.EnvWebIdentityTokenFile, "/token"), sts, false,
			"set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_WEB_IDENTITY_TOKEN_FILE"},
		{"nothing", env(), sts, false, "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_WEB_IDENTITY_TOKEN_FILE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			creds, err := envCredentials(tc.env, tc.sts, nil)
			if tc.want != "" {
				if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want ErrInvalidArgument saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.static {
				return // the STS is asked on first use
			}
			v, err := creds.GetWithContext(&credentials.CredContext{})
			if err != nil || v.AccessKeyID != "id" || v.SecretAccessKey != "secret" {
				t.Errorf("credentials %+v, %v", v, err)
			}
		})
	}
}
