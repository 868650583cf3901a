package datamover

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// The mover's log is kept in the status of the backup or restore whose Job
// ran it, where whoever may read the object reads it: no secret may reach
// it. The credentials, an SSE-C key and a web identity token reach the
// mover as environment variables and files; a redactor knows their values
// and blanks them out of every message and attribute the mover logs and of
// the error it reports, whatever quoted them (a store's error echoing a
// header, say).

// minRedactLen is the shortest credential blanked out by redactor: no real
// access key or secret is shorter, and shorter strings would blank out
// ordinary words.
const minRedactLen = 4

// maxSecretFileBytes bounds what is read of a file holding a secret; an
// SSE-C key or a token is far smaller.
const maxSecretFileBytes = 64 << 10

// redacted replaces a secret.
const redacted = "[redacted]"

// redactor blanks out the secret values it knows.
type redactor struct {
	mu      sync.RWMutex
	secrets []string
}

// newRedactor knows the S3 credentials of the environment.
func newRedactor(lookupEnv func(string) (string, bool)) *redactor {
	r := &redactor{}
	// A copy's destination has credentials of its own (moverprotocol.ToEnv).
	for _, name := range []string{moverprotocol.EnvSecretAccessKey, moverprotocol.EnvSessionToken, moverprotocol.EnvAccessKeyID} {
		for _, name := range []string{name, moverprotocol.ToEnv(name)} {
			if v, ok := lookupEnv(name); ok {
				r.add(v)
			}
		}
	}
	for _, name := range []string{moverprotocol.EnvWebIdentityTokenFile, moverprotocol.ToEnv(moverprotocol.EnvWebIdentityTokenFile)} {
		if file, ok := lookupEnv(name); ok && file != "" {
			r.addFile(file)
		}
	}
	return r
}

// add makes secret, and its trimmed form, known.
func (r *redactor) add(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range []string{secret, strings.TrimSpace(secret)} {
		if len(s) >= minRedactLen && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first: a secret holding another is blanked whole.
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// addFile makes the content of a file holding a secret known, as it is and
// in base64 both ways (an SSE-C key is sent base64-encoded, and may be
// stored so); a file that cannot be read holds nothing the mover can log.
func (r *redactor) addFile(name string) {
	f, err := os.Open(name)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFileBytes))
	if err != nil {
		return
	}
	r.add(string(b))
	r.add(base64.StdEncoding.EncodeToString(b))
	trimmed := bytes.TrimSpace(b)
	r.add(base64.StdEncoding.EncodeToString(trimmed))
	if decoded, err := base64.StdEncoding.DecodeString(string(trimmed)); err == nil {
		r.add(string(decoded))
	}
}

// redact blanks out every secret known in s.
func (r *redactor) redact(s string) string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, redacted)
	}
	return s
}

// redactingHandler is a slog.Handler that redacts the message and every
// attribute of a record before next writes it.
type redactingHandler struct {
	next slog.Handler
	r    *redactor
}

// newRedactingHandler wraps next with r.
func newRedactingHandler(next slog.Handler, r *redactor) slog.Handler {
	return &redactingHandler{next: next, r: r}
}

func (h *redactingHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.redact(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	redactedAttrs := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		redactedAttrs[i] = h.attr(a)
	}
	return &redactingHandler{next: h.next.WithAttrs(redactedAttrs), r: h.r}
}

func (h *redactingHandler) WithGroup(name string) slog.Handler {
	return &redactingHandler{next: h.next.WithGroup(name), r: h.r}
}

// attr is a with its text redacted: strings, errors, anything else that
// prints itself, and the attributes of a group.
func (h *redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.redact(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]slog.Attr, len(group))
		for i, g := range group {
			out[i] = h.attr(g)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, h.r.redact(x.Error()))
		case []byte:
			return slog.String(a.Key, h.r.redact(string(x)))
		default:
			// Anything else is written as JSON or with %+v: redact that.
			return slog.String(a.Key, h.r.redact(slog.AnyValue(x).String()))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
