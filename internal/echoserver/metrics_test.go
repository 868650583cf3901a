package echoserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

func scrape(t *testing.T, s *Server) string {
	t.Helper()
	rec := do(t, s.Handler(), http.MethodGet, "/metrics", nil)
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics = %d", rec.Code)
	}
	return rec.Body.String()
}

func TestMetricsExposed(t *testing.T) {
	s := newTestServer(t, withDataDir(t.TempDir()))
	requests := []struct{ method, path string }{
		{http.MethodGet, "/a"},
		{http.MethodGet, "/b"},
		{http.MethodPost, "/c"},
		{"BREW", "/pot"},
		{http.MethodGet, "/healthz"},
		{http.MethodPost, "/readyz"},
	}
	for _, r := range requests {
		do(t, s.Handler(), r.method, r.path, strings.NewReader("x"))
	}
	journalBytes := s.journal.Size()
	if journalBytes == 0 {
		t.Fatal("four entries journaled, journal size 0")
	}
	// Two more echo requests that cannot be journaled.
	_ = s.journal.f.Close()
	do(t, s.Handler(), http.MethodPost, "/d", nil)
	do(t, s.Handler(), http.MethodPost, "/e", nil)

	body := scrape(t, s)
	wantLines := []string{
		`echo_http_requests_total{code="200",handler="echo",method="GET"} 2`,
		`echo_http_requests_total{code="200",handler="echo",method="POST"} 1`,
		`echo_http_requests_total{code="200",handler="echo",method="OTHER"} 1`,
		`echo_http_requests_total{code="500",handler="echo",method="POST"} 2`,
		`echo_http_requests_total{code="200",handler="healthz",method="GET"} 1`,
		`echo_http_requests_total{code="405",handler="readyz",method="POST"} 1`,
		`echo_http_request_duration_seconds_count{handler="echo",method="GET"} 2`,
		`echo_http_request_duration_seconds_count{handler="echo",method="POST"} 3`,
		`echo_http_requests_in_flight 1`, // the scrape itself
		`echo_journal_entries_total 4`,
		`echo_journal_write_errors_total 2`,
		// The failed appends left nothing: the size is that of the four.
		fmt.Sprintf("echo_journal_bytes %d", journalBytes),
	}
	for _, want := range wantLines {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	wantFamilies := []string{"go_goroutines", "go_memstats_alloc_bytes", "promhttp_metric_handler_errors_total"}
	if runtime.GOOS == "linux" {
		wantFamilies = append(wantFamilies, "process_start_time_seconds", "process_open_fds")
	}
	for _, name := range wantFamilies {
		if !strings.Contains(body, "\n# TYPE "+name+" ") {
			t.Errorf("metrics lack the %s family", name)
		}
	}
}

func TestMetricsRegistryIsPerServer(t *testing.T) {
	busy := newTestServer(t, nil)
	idle := newTestServer(t, nil)
	for range 3 {
		do(t, busy.Handler(), http.MethodGet, "/x", nil)
	}
	if body := scrape(t, idle); strings.Contains(body, `handler="echo"`) {
		t.Error("requests to one server show up in another server's metrics")
	}
	if body := scrape(t, busy); !strings.Contains(body, `echo_http_requests_total{code="200",handler="echo",method="GET"} 3`) {
		t.Error("busy server does not count its own requests")
	}
}

func TestMethodLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{"GET", "GET"}, {"HEAD", "HEAD"}, {"POST", "POST"}, {"PUT", "PUT"}, {"PATCH", "PATCH"},
		{"DELETE", "DELETE"}, {"CONNECT", "CONNECT"}, {"OPTIONS", "OPTIONS"}, {"TRACE", "TRACE"},
		{"get", "OTHER"}, {"PROPFIND", "OTHER"}, {"", "OTHER"},
	}
	for _, tt := range tests {
		if got := methodLabel(tt.in); got != tt.want {
			t.Errorf("methodLabel(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestStatusWriter(t *testing.T) {
	tests := []struct {
		name  string
		write func(http.ResponseWriter)
		want  int
	}{
		{name: "nothing written", write: func(http.ResponseWriter) {}, want: http.StatusOK},
		{name: "body only", write: func(w http.ResponseWriter) { _, _ = w.Write([]byte("x")) }, want: http.StatusOK},
		{name: "explicit status", write: func(w http.ResponseWriter) { w.WriteHeader(http.StatusTeapot) }, want: http.StatusTeapot},
		{name: "first status wins", write: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusNotFound)
			w.WriteHeader(http.StatusOK)
		}, want: http.StatusNotFound},
		{name: "informational then final", write: func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusAccepted)
		}, want: http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sw := &statusWriter{ResponseWriter: httptest.NewRecorder()}
			tt.write(sw)
			if got := sw.code(); got != tt.want {
				t.Errorf("code() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestJournalBytesOnlyWithPersistence(t *testing.T) {
	if body := scrape(t, newTestServer(t, nil)); strings.Contains(body, "echo_journal_bytes") {
		t.Error("a server without a journal reports its size")
	}
}
