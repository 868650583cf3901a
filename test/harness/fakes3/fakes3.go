package fakes3

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is a running fake S3 service.
type Server struct {
	// Endpoint is the service's URL, http://127.0.0.1:<port>.
	Endpoint string

	srv *httptest.Server
	// closing ends the answers that wait for their client.
	closing chan struct{}

	mu      sync.Mutex
	buckets map[string]*bucketState
}

type bucketState struct {
	behaviour Bucket
	stats     Stats
}

// Stats counts what the server answered for one bucket.
type Stats struct {
	// ListRequests counts ListObjectsV2 requests: the pages asked for.
	ListRequests atomic.Int64
	// GetRequests counts GET and HEAD requests of objects.
	GetRequests atomic.Int64
	// BytesSent counts the bytes of response bodies written: beyond what
	// the client read, only what the connection buffers.
	BytesSent atomic.Int64
}

// Start starts a server on 127.0.0.1 that stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartAt(t, "127.0.0.1")
}

// StartAt is Start on host, a loopback address.
func StartAt(t testing.TB, host string) *Server {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("listening for the fake S3 service: %v", err)
	}
	s := &Server{closing: make(chan struct{}), buckets: map[string]*bucketState{}}
	s.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: time.Minute}}
	s.srv.Start()
	s.Endpoint = s.srv.URL
	t.Cleanup(func() {
		close(s.closing)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// Add serves bucket with the behaviour b.
func (s *Server) Add(bucket string, b Bucket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buckets[bucket] = &bucketState{behaviour: b}
}

// Stats is what the server answered for bucket so far.
func (s *Server) Stats(bucket string) *Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buckets[bucket]; ok {
		return &b.stats
	}
	return &Stats{}
}

// request is one request to a bucket, with what its answer needs.
type request struct {
	w       http.ResponseWriter
	r       *http.Request
	stats   *Stats
	closing <-chan struct{}
}

// write sends part of the body and counts it.
func (q request) write(b []byte) error {
	n, err := q.w.Write(b)
	q.stats.BytesSent.Add(int64(n))
	return err
}

// serve routes path-style requests: /bucket?list-type=2 lists it,
// /bucket/key reads an object.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	name, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	s.mu.Lock()
	b, ok := s.buckets[name]
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist")
		return
	}
	q := request{w: w, r: r, stats: &b.stats, closing: s.closing}
	switch {
	case key == "" && r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2":
		b.stats.ListRequests.Add(1)
		b.behaviour.list(q, r.URL.Query().Get("prefix"), r.URL.Query().Get("continuation-token"))
	case key != "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		b.stats.GetRequests.Add(1)
		b.behaviour.object(q, key)
	default:
		writeError(w, http.StatusNotImplemented, "NotImplemented", "The fake serves listings and reads only")
	}
}
