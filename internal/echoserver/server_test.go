package echoserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// failsafe bounds every wait in these tests; nothing sleeps.
const failsafe = 10 * time.Second

func newTestServer(t *testing.T, mutate func(*Config)) *Server {
	t.Helper()
	cfg := Config{Message: "Hello from Echo", Instance: "web-0"}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func withDataDir(dir string) func(*Config) {
	return func(c *Config) { c.DataDir = dir }
}

// do sends one request straight to the handler.
func do(t *testing.T, h http.Handler, method, target string, body io.Reader) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, body))
	return rec
}

func decodeEcho(t *testing.T, r io.Reader) EchoResponse {
	t.Helper()
	var resp EchoResponse
	if err := json.NewDecoder(r).Decode(&resp); err != nil {
		t.Fatalf("decode echo response: %v", err)
	}
	return resp
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failsafe):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func TestNew(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     Config
		wantErr error // nil: success; errAny: any error
	}{
		{name: "no persistence", cfg: Config{Instance: "web-0"}},
		{name: "persistence", cfg: Config{Instance: "web-0", DataDir: t.TempDir()}},
		{name: "missing instance", cfg: Config{}, wantErr: ErrInvalidInstance},
		{name: "data dir is a file", cfg: Config{Instance: "web-0", DataDir: file}, wantErr: errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(tt.cfg)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				return
			}
			if err == nil {
				_ = s.Close()
				t.Fatal("New succeeded, want error")
			}
			if !errors.Is(tt.wantErr, errAny) && !errors.Is(err, tt.wantErr) {
				t.Errorf("New error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestRunGracefulShutdown serves on a real listener, cancels the context
// while a request is in flight and checks that readiness fails first, the
// in-flight request completes and is journaled, and Run returns nil.
func TestRunGracefulShutdown(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, func(c *Config) {
		c.Listen = "127.0.0.1:0"
		c.DataDir = dir
	})
	entered, release := make(chan struct{}), make(chan struct{})
	s.handler = holdPath("/slow", s.handler, entered, release)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	wait(t, s.Listening(), "listener")
	base := "http://" + s.Addr().String()
	client := &http.Client{Transport: &http.Transport{}}

	if got := get(t, client, base+"/readyz"); got != http.StatusOK {
		t.Fatalf("/readyz before shutdown = %d, want 200", got)
	}

	type result struct {
		resp *http.Response
		err  error
	}
	slow := make(chan result, 1)
	go func() {
		resp, err := client.Post(base+"/slow", "text/plain", strings.NewReader("in flight"))
		slow <- result{resp, err}
	}()
	wait(t, entered, "in-flight request")

	cancel()
	wait(t, s.drainCh, "shutdown to begin")
	if rec := do(t, s.Handler(), http.MethodGet, "/readyz", nil); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz during shutdown = %d, want 503", rec.Code)
	}
	if rec := do(t, s.Handler(), http.MethodGet, "/healthz", nil); rec.Code != http.StatusOK {
		t.Errorf("/healthz during shutdown = %d, want 200", rec.Code)
	}
	select {
	case err := <-runErr:
		t.Fatalf("Run returned %v before the in-flight request finished", err)
	default:
	}

	close(release)
	res := wait(t, slow, "in-flight response")
	if res.err != nil {
		t.Fatalf("in-flight request failed: %v", res.err)
	}
	defer func() { _ = res.resp.Body.Close() }()
	if res.resp.StatusCode != http.StatusOK {
		t.Fatalf("in-flight request status = %d, want 200", res.resp.StatusCode)
	}
	if echo := decodeEcho(t, res.resp.Body); echo.Body != "in flight" || echo.Sequence != 1 {
		t.Errorf("in-flight echo = %+v, want body %q and sequence 1", echo, "in flight")
	}

	if err := wait(t, runErr, "Run to return"); err != nil {
		t.Fatalf("Run = %v, want nil after graceful shutdown", err)
	}
	if conn, err := net.Dial("tcp", s.Addr().String()); err == nil {
		_ = conn.Close()
		t.Error("listener still accepts connections after Run returned")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	entries := readJournal(t, journalFile(dir, "web-0"))
	if len(entries) != 1 || entries[0].Path != "/slow" {
		t.Errorf("journal = %+v, want exactly the /slow request", entries)
	}
}

func TestRunShutdownTimeout(t *testing.T) {
	s := newTestServer(t, func(c *Config) {
		c.Listen = "127.0.0.1:0"
		c.ShutdownTimeout = time.Nanosecond
	})
	entered, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	s.handler = holdPath("/stuck", s.handler, entered, release)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- s.Run(ctx) }()
	wait(t, s.Listening(), "listener")
	go func() {
		resp, err := http.Get("http://" + s.Addr().String() + "/stuck")
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	wait(t, entered, "stuck request")

	cancel()
	if err := wait(t, runErr, "Run to return"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want a wrapped context.DeadlineExceeded", err)
	}
}

func TestRunListenError(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = busy.Close() }()
	s := newTestServer(t, func(c *Config) { c.Listen = busy.Addr().String() })
	if err := s.Run(t.Context()); err == nil {
		t.Fatal("Run on a busy address succeeded")
	}
	if s.Addr() != nil {
		t.Errorf("Addr = %v after a failed listen, want nil", s.Addr())
	}
}

func TestServeOnlyOnce(t *testing.T) {
	s := newTestServer(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // serve and shut down at once
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ctx, ln); err != nil {
		t.Fatalf("first Serve: %v", err)
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ctx, ln2); !errors.Is(err, errAlreadyStarted) {
		t.Errorf("second Serve = %v, want errAlreadyStarted", err)
	}
	if _, err := ln2.Accept(); err == nil {
		t.Error("second listener was left open")
	}
}

// holdPath makes requests for path wait for release after signalling entered.
func holdPath(path string, next http.Handler, entered chan<- struct{}, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == path {
			close(entered)
			<-release
		}
		next.ServeHTTP(w, r)
	})
}

func get(t *testing.T, c *http.Client, url string) int {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
