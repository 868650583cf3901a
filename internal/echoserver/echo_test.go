package echoserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestEchoResponse(t *testing.T) {
	tests := []struct {
		name    string
		method  string
		target  string
		body    string
		headers map[string][]string
		want    EchoResponse // Message, Instance, Host, RemoteAddr are checked separately
	}{
		{
			name:    "GET with query and repeated header",
			method:  http.MethodGet,
			target:  "/hello?a=1&b=two&a=3",
			headers: map[string][]string{"X-Test": {"v1", "v2"}},
			want:    EchoResponse{Method: "GET", Path: "/hello", Query: "a=1&b=two&a=3", Headers: map[string][]string{"X-Test": {"v1", "v2"}}},
		},
		{
			name:   "POST with body",
			method: http.MethodPost,
			target: "/api/items",
			body:   `{"name":"widget"}`,
			want:   EchoResponse{Method: "POST", Path: "/api/items", Body: `{"name":"widget"}`},
		},
		{
			name:   "custom method",
			method: "PURGE",
			target: "/cache",
			body:   "k",
			want:   EchoResponse{Method: "PURGE", Path: "/cache", Body: "k"},
		},
		{
			name:   "path below a reserved path is echoed",
			method: http.MethodGet,
			target: "/healthz/extra",
			want:   EchoResponse{Method: "GET", Path: "/healthz/extra"},
		},
		{
			name:   "path is echoed without cleaning",
			method: http.MethodDelete,
			target: "/a//b/../c",
			want:   EchoResponse{Method: "DELETE", Path: "/a//b/../c"},
		},
	}
	s := newTestServer(t, func(c *Config) { c.Message = "configured message" })
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+tt.target, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, vs := range tt.headers {
				for _, v := range vs {
					req.Header.Add(k, v)
				}
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, want 200", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			got := decodeEcho(t, resp.Body)
			if got.Message != "configured message" || got.Instance != "web-0" {
				t.Errorf("message/instance = %q/%q, want %q/%q", got.Message, got.Instance, "configured message", "web-0")
			}
			if got.Host != srv.Listener.Addr().String() {
				t.Errorf("host = %q, want %q", got.Host, srv.Listener.Addr().String())
			}
			if !strings.HasPrefix(got.RemoteAddr, "127.0.0.1:") {
				t.Errorf("remoteAddr = %q, want the client's 127.0.0.1 address", got.RemoteAddr)
			}
			if got.Method != tt.want.Method || got.Path != tt.want.Path || got.Query != tt.want.Query || got.Body != tt.want.Body {
				t.Errorf("echo = %+v, want %+v", got, tt.want)
			}
			for k, want := range tt.want.Headers {
				if fmt.Sprint(got.Headers[k]) != fmt.Sprint(want) {
					t.Errorf("header %s = %v, want %v", k, got.Headers[k], want)
				}
			}
			if ua := got.Headers["User-Agent"]; len(ua) != 1 {
				t.Errorf("User-Agent header not echoed: %v", got.Headers)
			}
			if got.Sequence != 0 {
				t.Errorf("sequence = %d without persistence, want 0", got.Sequence)
			}
		})
	}
}

func TestEchoHeadAndOptions(t *testing.T) {
	s := newTestServer(t, withDataDir(t.TempDir()))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	tests := []struct {
		method     string
		wantStatus int
		wantHeader map[string]string
	}{
		{method: http.MethodHead, wantStatus: http.StatusOK, wantHeader: map[string]string{"Content-Type": "application/json"}},
		{method: http.MethodOptions, wantStatus: http.StatusNoContent, wantHeader: map[string]string{"Allow": echoAllow}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, srv.URL+"/thing", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if len(body) != 0 {
				t.Errorf("body = %q, want none", body)
			}
			for k, v := range tt.wantHeader {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
	if seq := s.journal.Seq(); seq != 0 {
		t.Errorf("HEAD/OPTIONS were journaled: seq = %d", seq)
	}
}

func TestEchoBodyLimit(t *testing.T) {
	tests := []struct {
		name       string
		size       int
		chunked    bool // unknown Content-Length
		wantStatus int
	}{
		{name: "empty", size: 0, wantStatus: http.StatusOK},
		{name: "exactly the limit", size: DefaultMaxBodyBytes, wantStatus: http.StatusOK},
		{name: "exactly the limit, chunked", size: DefaultMaxBodyBytes, chunked: true, wantStatus: http.StatusOK},
		{name: "one byte over", size: DefaultMaxBodyBytes + 1, wantStatus: http.StatusRequestEntityTooLarge},
		{name: "one byte over, chunked", size: DefaultMaxBodyBytes + 1, chunked: true, wantStatus: http.StatusRequestEntityTooLarge},
	}
	s := newTestServer(t, withDataDir(t.TempDir()))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Repeat("b", tt.size)
			req := httptest.NewRequest(http.MethodPost, "/upload", strings.NewReader(body))
			if tt.chunked {
				req.ContentLength = -1
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK {
				if got := decodeEcho(t, rec.Body); got.Body != body {
					t.Errorf("echoed body has %d bytes, want %d", len(got.Body), len(body))
				}
			} else if !strings.Contains(rec.Body.String(), "exceeds") {
				t.Errorf("error body = %q, want an explanation", rec.Body.String())
			}
		})
	}
	// Only the three accepted requests are journaled.
	if seq := s.journal.Seq(); seq != 3 {
		t.Errorf("journal seq = %d, want 3", seq)
	}
}

func TestEchoJournalsBeforeAnswering(t *testing.T) {
	dir := t.TempDir()
	s := newTestServer(t, withDataDir(dir))
	tests := []struct {
		method  string
		target  string
		body    string
		wantSeq uint64 // 0: not journaled
	}{
		{method: http.MethodPost, target: "/orders?id=7", body: "first", wantSeq: 1},
		{method: http.MethodGet, target: "/healthz"},
		{method: http.MethodGet, target: "/readyz"},
		{method: http.MethodGet, target: "/metrics"},
		{method: http.MethodGet, target: "/journal"},
		{method: http.MethodPost, target: "/healthz"}, // 405, still reserved
		{method: http.MethodPut, target: "/orders/7", body: "second", wantSeq: 2},
	}
	for _, tt := range tests {
		rec := do(t, s.Handler(), tt.method, tt.target, strings.NewReader(tt.body))
		if tt.wantSeq == 0 {
			continue
		}
		if got := decodeEcho(t, rec.Body).Sequence; got != tt.wantSeq {
			t.Fatalf("%s %s: sequence = %d, want %d", tt.method, tt.target, got, tt.wantSeq)
		}
		// The entry is on disk by the time the answer is written.
		entries := readJournal(t, journalFile(dir, "web-0"))
		last := entries[len(entries)-1]
		sum := sha256.Sum256([]byte(tt.body))
		if last.Seq != tt.wantSeq || last.Method != tt.method || last.Path != strings.Split(tt.target, "?")[0] ||
			last.BodySize != int64(len(tt.body)) || last.BodySHA256 != hex.EncodeToString(sum[:]) || last.Message != "Hello from Echo" {
			t.Errorf("%s %s: journal entry = %+v", tt.method, tt.target, last)
		}
	}
	if n := len(readJournal(t, journalFile(dir, "web-0"))); n != 2 {
		t.Errorf("journal has %d lines, want 2 (reserved paths are not journaled)", n)
	}
}

func TestEchoSequenceContinuesAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	post := func(s *Server) uint64 {
		rec := do(t, s.Handler(), http.MethodPost, "/", strings.NewReader("x"))
		if rec.Code != http.StatusOK {
			t.Fatalf("status = %d", rec.Code)
		}
		return decodeEcho(t, rec.Body).Sequence
	}

	first := newTestServer(t, withDataDir(dir))
	for want := uint64(1); want <= 2; want++ {
		if got := post(first); got != want {
			t.Fatalf("first server: sequence = %d, want %d", got, want)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := newTestServer(t, withDataDir(dir))
	if got := post(second); got != 3 {
		t.Errorf("after restart: sequence = %d, want 3", got)
	}
	if n := len(readJournal(t, journalFile(dir, "web-0"))); n != 3 {
		t.Errorf("journal has %d lines, want 3", n)
	}
}

func TestEchoConcurrentRequests(t *testing.T) {
	const n = 50
	dir := t.TempDir()
	s := newTestServer(t, withDataDir(dir))
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			resp, err := srv.Client().Post(srv.URL+fmt.Sprintf("/req/%d", i), "text/plain", strings.NewReader(fmt.Sprintf("body-%d", i)))
			if err != nil {
				errs <- err
				return
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("request %d: status %d", i, resp.StatusCode)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	entries := readJournal(t, journalFile(dir, "web-0"))
	if len(entries) != n {
		t.Fatalf("journal has %d lines, want %d", len(entries), n)
	}
	paths := make(map[string]bool)
	for i, e := range entries {
		if e.Seq != uint64(i+1) {
			t.Errorf("line %d has seq %d", i+1, e.Seq)
		}
		var id int
		if _, err := fmt.Sscanf(e.Path, "/req/%d", &id); err != nil {
			t.Fatalf("line %d: unexpected path %q", i+1, e.Path)
		}
		sum := sha256.Sum256(fmt.Appendf(nil, "body-%d", id))
		if e.BodySHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("line %d: body hash does not match request %d", i+1, id)
		}
		paths[e.Path] = true
	}
	if len(paths) != n {
		t.Errorf("%d distinct requests journaled, want %d", len(paths), n)
	}
}

func TestEchoJournalFailure(t *testing.T) {
	s := newTestServer(t, withDataDir(t.TempDir()))
	_ = s.journal.f.Close() // the disk goes away underneath the server

	rec := do(t, s.Handler(), http.MethodPost, "/x", strings.NewReader("data"))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500 when the request cannot be journaled", rec.Code)
	}
	if strings.Contains(rec.Body.String(), `"message"`) {
		t.Errorf("an unjournaled request was echoed: %s", rec.Body.String())
	}
	if rec := do(t, s.Handler(), http.MethodGet, "/readyz", nil); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("/readyz = %d, want 503 after the journal failed", rec.Code)
	}
}
