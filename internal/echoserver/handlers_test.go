package echoserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestHealthz(t *testing.T) {
	s := newTestServer(t, withDataDir(t.TempDir()))
	for _, state := range []string{"serving", "closed"} {
		if state == "closed" {
			_ = s.Close()
		}
		rec := do(t, s.Handler(), http.MethodGet, "/healthz", nil)
		if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
			t.Errorf("%s: /healthz = %d %q, want 200 \"ok\"", state, rec.Code, rec.Body.String())
		}
	}
}

func TestReadyz(t *testing.T) {
	tests := []struct {
		name       string
		persist    bool
		prepare    func(*Server)
		wantStatus int
		wantReason string
	}{
		{name: "serving without persistence", wantStatus: http.StatusOK},
		{name: "serving with persistence", persist: true, wantStatus: http.StatusOK},
		{name: "shutting down", prepare: (*Server).beginDrain, wantStatus: http.StatusServiceUnavailable, wantReason: "shutting down"},
		{name: "closed", persist: true, prepare: func(s *Server) { _ = s.Close() }, wantStatus: http.StatusServiceUnavailable, wantReason: "shutting down"},
		{
			name:    "journal closed",
			persist: true,
			prepare: func(s *Server) { _ = s.journal.Close() },
			// Not draining: only the journal is at fault.
			wantStatus: http.StatusServiceUnavailable, wantReason: "journal closed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(t, func(c *Config) {
				if tt.persist {
					c.DataDir = t.TempDir()
				}
			})
			if tt.prepare != nil {
				tt.prepare(s)
			}
			rec := do(t, s.Handler(), http.MethodGet, "/readyz", nil)
			if rec.Code != tt.wantStatus {
				t.Errorf("/readyz = %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantReason != "" && !strings.Contains(rec.Body.String(), tt.wantReason) {
				t.Errorf("/readyz body = %q, want it to mention %q", rec.Body.String(), tt.wantReason)
			}
		})
	}
}

func TestReservedPathsAreReadOnly(t *testing.T) {
	s := newTestServer(t, nil)
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/journal"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			rec := do(t, s.Handler(), method, path, strings.NewReader("x"))
			if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
				t.Errorf("%s %s = %d (Allow %q), want 405 with Allow: GET, HEAD",
					method, path, rec.Code, rec.Header().Get("Allow"))
			}
		}
	}
}

func TestJournalEndpoint(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, withDataDir(dir))
	for _, body := range []string{"one", "two"} {
		if rec := do(t, s.Handler(), http.MethodPost, "/p", strings.NewReader(body)); rec.Code != http.StatusOK {
			t.Fatalf("seed request: %d", rec.Code)
		}
	}
	own, err := os.ReadFile(journalFile(dir, "web-0"))
	if err != nil {
		t.Fatal(err)
	}
	other := writeLines(t, journalFile(dir, "web-1"), 2, `{"torn`)
	if err := os.WriteFile(filepath.Join(dir, "outside.jsonl"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	off := httptest.NewServer(newTestServer(t, nil).Handler())
	defer off.Close()

	tests := []struct {
		name       string
		base       string
		method     string
		query      string
		wantStatus int
		wantBody   string // checked on 200
	}{
		{name: "own journal", base: srv.URL, method: http.MethodGet, wantStatus: http.StatusOK, wantBody: string(own)},
		{name: "own journal by name", base: srv.URL, method: http.MethodGet, query: "?instance=web-0", wantStatus: http.StatusOK, wantBody: string(own)},
		{name: "other instance, complete lines only", base: srv.URL, method: http.MethodGet, query: "?instance=web-1", wantStatus: http.StatusOK, wantBody: other},
		{name: "HEAD has no body", base: srv.URL, method: http.MethodHead, wantStatus: http.StatusOK},
		{name: "unknown instance", base: srv.URL, method: http.MethodGet, query: "?instance=web-9", wantStatus: http.StatusNotFound},
		{name: "traversal is sanitised", base: srv.URL, method: http.MethodGet, query: "?instance=../outside", wantStatus: http.StatusNotFound},
		{name: "overlong instance", base: srv.URL, method: http.MethodGet, query: "?instance=" + strings.Repeat("x", 300), wantStatus: http.StatusBadRequest},
		{name: "persistence off", base: off.URL, method: http.MethodGet, wantStatus: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, tt.base+"/journal"+tt.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %q)", resp.StatusCode, tt.wantStatus, body)
			}
			if strings.Contains(string(body), "secret") {
				t.Fatal("a file outside the journal directory was served")
			}
			if resp.StatusCode != http.StatusOK {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != ndjsonContentType {
				t.Errorf("Content-Type = %q, want %q", ct, ndjsonContentType)
			}
			if tt.method == http.MethodHead {
				if len(body) != 0 || resp.Header.Get("Content-Length") != strconv.Itoa(len(own)) {
					t.Errorf("HEAD: body %q, Content-Length %q; want no body and length %d",
						body, resp.Header.Get("Content-Length"), len(own))
				}
				return
			}
			if string(body) != tt.wantBody {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
		})
	}
}
