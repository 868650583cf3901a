package datamover

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// TestCLILogRevealsNoSecret runs every subcommand with credentials, an
// SSE-C key and a web identity token, succeeding and failing, against MinIO
// over TLS, and against a store that quotes every request header back in
// its errors: neither the log (stderr, which the operator keeps in the
// backup's status) nor the termination log holds any of their values. The
// log says each step.
func TestCLILogRevealsNoSecret(t *testing.T) {
	needManager(t)
	srv := s3server.StartTLS(t, testBucket)
	source, _ := echoData(t)
	sseKey := randomSecret(t, 32)
	keyB64 := base64.StdEncoding.EncodeToString(sseKey)
	rawKey, textKey := keyFile(t, sseKey), keyFile(t, []byte(keyB64+"\n"))
	otherKey := keyFile(t, randomSecret(t, 32))
	token := "eyJ" + hex.EncodeToString(randomSecret(t, 24))
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token), 0o400); err != nil {
		t.Fatal(err)
	}
	wrong := "wrong-" + hex.EncodeToString(randomSecret(t, 12))
	secrets := map[string]string{"the secret key": srv.SecretKey, "the access key": srv.AccessKey, "the wrong secret": wrong,
		"the SSE-C key": string(sseKey), "the SSE-C key in base64": keyB64, "the web identity token": token}

	sse := func(file string) []string {
		return encryptionFlags(backupstore.S3Encryption{Type: moverprotocol.SSEC, CustomerKeyFile: file})
	}
	storage := func(file string) []string { return append(s3Flags(srv, testBucket), sse(file)...) }
	wrongEnv := []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + wrong}
	tokenEnv := []string{"AWS_WEB_IDENTITY_TOKEN_FILE=" + tokenFile}
	echoing := startEchoingStore(t)

	runs := []struct {
		name  string
		env   []string
		args  []string
		ok    bool
		steps []string
	}{
		{name: "backup", env: srv.Env(), ok: true, args: append([]string{"backup", "--data-dir", source, "--key", "s/b1"}, storage(rawKey)...),
			steps: []string{"connecting to the store", "store reachable", "backup started", "archive written", "manifest written", "backup complete"}},
		{name: "inspect", env: srv.Env(), ok: true, args: append([]string{"inspect", "--key", "s/b1"}, storage(textKey)...),
			steps: []string{"connecting to the store", "inspect started", "inspect complete"}},
		{name: "restore", env: srv.Env(), ok: true,
			args:  append([]string{"restore", "--data-dir", filepath.Join(t.TempDir(), "r"), "--key", "s/b1"}, storage(rawKey)...),
			steps: []string{"connecting to the store", "manifest read", "restore started", "archive verified", "restore complete"}},
		{name: "restore with another SSE-C key", env: srv.Env(),
			args:  append([]string{"restore", "--data-dir", filepath.Join(t.TempDir(), "r"), "--key", "s/b1"}, storage(otherKey)...),
			steps: []string{"connecting to the store", "restore failed"}},
		{name: "backup with a wrong secret", env: wrongEnv,
			args:  append([]string{"backup", "--data-dir", source, "--key", "s/b2"}, storage(rawKey)...),
			steps: []string{"connecting to the store", "backup failed"}},
		{name: "backup with a web identity token the store refuses", env: tokenEnv,
			args:  append([]string{"backup", "--data-dir", source, "--key", "s/b3", "--s3-sts-endpoint", srv.Endpoint}, storage(rawKey)...),
			steps: []string{"backup failed"}},
		{name: "delete", env: srv.Env(), ok: true, args: append([]string{"delete", "--key", "s/b1"}, storage(rawKey)...),
			steps: []string{"connecting to the store", "delete started", "delete complete"}},
		{name: "backup to a store quoting the request back", env: srv.Env(),
			args: append([]string{"backup", "--data-dir", source, "--key", "s/b4", "--s3-endpoint", echoing.endpoint, "--s3-ca-file", echoing.caFile,
				"--s3-bucket", testBucket, "--s3-path-style"}, sse(rawKey)...),
			steps: []string{"connecting to the store", "backup failed", redacted}},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			res := runMover(t, run.env, run.args...)
			t.Logf("the log: %d lines, %d bytes", strings.Count(res.stderr, "\n"), len(res.stderr))
			if (res.code == 0) != run.ok {
				t.Fatalf("exit code %d; want success %v\n%s\n%s", res.code, run.ok, res.term, res.stderr)
			}
			for what, secret := range secrets {
				if strings.Contains(res.stderr, secret) || strings.Contains(res.term, secret) {
					t.Errorf("the output reveals %s:\n%s\n%s", what, res.term, res.stderr)
				}
			}
			for _, step := range run.steps {
				if !strings.Contains(res.stderr, step) {
					t.Errorf("the log does not say %q:\n%s", step, res.stderr)
				}
			}
		})
	}
	if echoing.requests() == 0 {
		t.Error("the echoing store was never asked: its case proves nothing")
	}
}

// randomSecret is n random bytes.
func randomSecret(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// echoingStore is an S3 endpoint over TLS that holds no backup, lists no
// unfinished upload, and refuses every write with an S3 error quoting all
// the request's headers, as a store or proxy that reflects what it was
// sent would.
type echoingStore struct {
	endpoint, caFile string
	srv              *httptest.Server
	count            chan struct{}
}

func startEchoingStore(t *testing.T) *echoingStore {
	t.Helper()
	e := &echoingStore{count: make(chan struct{}, 1024)}
	e.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case e.count <- struct{}{}:
		default:
		}
		switch {
		case r.Method == http.MethodHead:
			// No backup under the key yet: the mover goes on to write.
			w.WriteHeader(http.StatusNotFound)
			return
		case r.Method == http.MethodGet && r.URL.Query().Has("uploads"):
			w.Header().Set("Content-Type", "application/xml")
			_, _ = fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult><Bucket>backups</Bucket></ListMultipartUploadsResult>`)
			return
		}
		var quoted []string
		for name, values := range r.Header {
			quoted = append(quoted, name+": "+strings.Join(values, ","))
		}
		sort.Strings(quoted)
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidRequest</Code><Message>refused: %s</Message><RequestId>1</RequestId></Error>`,
			xmlEscape(strings.Join(quoted, "; ")))
	}))
	t.Cleanup(e.srv.Close)
	e.endpoint = e.srv.URL
	e.caFile = filepath.Join(t.TempDir(), "ca.crt")
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: e.srv.Certificate().Raw})
	if err := os.WriteFile(e.caFile, cert, 0o400); err != nil {
		t.Fatal(err)
	}
	return e
}

// requests is how many requests the store was sent.
func (e *echoingStore) requests() int { return len(e.count) }

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
