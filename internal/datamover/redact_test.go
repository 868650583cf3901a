package datamover

import (
	"bytes"
	"encoding/base64"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

func TestRedactingHandler(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("eyJtoken-value-1234\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte{0x07, 0xe1}, 16)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, key, 0o400); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{moverprotocol.EnvAccessKeyID: "AKIAEXAMPLE", moverprotocol.EnvSecretAccessKey: "s3cr3t/with+chars",
		moverprotocol.EnvSessionToken: "session-token-xyz", moverprotocol.EnvWebIdentityTokenFile: token}
	r := newRedactor(func(name string) (string, bool) { v, ok := env[name]; return v, ok })
	r.addFile(keyFile)
	secrets := []string{"AKIAEXAMPLE", "s3cr3t/with+chars", "session-token-xyz", "eyJtoken-value-1234", base64.StdEncoding.EncodeToString(key)}

	var out bytes.Buffer
	log := slog.New(newRedactingHandler(slog.NewJSONHandler(&out, nil), r)).With("with", "id AKIAEXAMPLE")
	log.Info("message s3cr3t/with+chars", "string", "Authorization: Credential=AKIAEXAMPLE/2026",
		"error", errors.New("denied: session-token-xyz"), "bytes", []byte("eyJtoken-value-1234"),
		slog.Group("group", "key", "x-amz-server-side-encryption-customer-key: "+base64.StdEncoding.EncodeToString(key)),
		"number", 42)
	log.WithGroup("g").Warn("token eyJtoken-value-1234")
	got := out.String()
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("the log holds %q:\n%s", s, got)
		}
	}
	if n := strings.Count(got, redacted); n < 7 {
		t.Errorf("%d redactions, want 7:\n%s", n, got)
	}
	if !strings.Contains(got, `"number":42`) {
		t.Errorf("a number lost its kind:\n%s", got)
	}
	if r.redact("abc") != "abc" {
		t.Error("a short word is blanked")
	}
}
