package echoserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Timeouts of the HTTP server run by Run. Journal downloads lift the write
// deadline for their own response.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 120 * time.Second
)

var (
	errShuttingDown   = errors.New("shutting down")
	errAlreadyStarted = errors.New("server already started")
)

// Server is the echo server. Create it with New, serve with Run (or Serve),
// and Close it once Run has returned.
type Server struct {
	cfg     Config
	log     *slog.Logger
	journal *Journal // nil when persistence is off
	metrics *metrics
	handler http.Handler

	started   atomic.Bool
	listening chan struct{} // closed once the listener is bound
	addr      net.Addr      // set before listening is closed

	draining  atomic.Bool
	drainOnce sync.Once
	drainCh   chan struct{} // closed when shutdown begins

	closeOnce sync.Once
	closeErr  error
}

// New validates cfg, opens the journal when cfg.DataDir is set and returns a
// Server ready to handle requests.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger.With("instance", cfg.Instance),
		metrics:   newMetrics(),
		listening: make(chan struct{}),
		drainCh:   make(chan struct{}),
	}
	if cfg.DataDir != "" {
		if s.journal, err = OpenJournal(cfg.DataDir, cfg.Instance, s.log); err != nil {
			return nil, fmt.Errorf("persistence: %w", err)
		}
		s.log.Info("journal opened", "path", s.journal.Path(), "seq", s.journal.Seq())
		s.metrics.watchJournal(s.journal)
	}
	s.handler = s.routes()
	return s, nil
}

// Instance returns the sanitised instance name.
func (s *Server) Instance() string { return s.cfg.Instance }

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Listening returns a channel that is closed once Run or Serve has bound its
// listener; Addr is valid from then on.
func (s *Server) Listening() <-chan struct{} { return s.listening }

// Addr returns the address being served, or nil before Listening is closed.
func (s *Server) Addr() net.Addr {
	select {
	case <-s.listening:
		return s.addr
	default:
		return nil
	}
}

// Run listens on cfg.Listen and serves until ctx is cancelled, then shuts
// down gracefully; see Serve.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %q: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx is cancelled. It then reports not ready, stops
// accepting connections and waits up to cfg.ShutdownTimeout for in-flight
// requests before returning. It returns nil after a complete graceful
// shutdown. A Server serves at most once; ln is closed on return.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if !s.started.CompareAndSwap(false, true) {
		_ = ln.Close()
		return errAlreadyStarted
	}
	srv := s.httpServer()
	s.addr = ln.Addr()
	close(s.listening)
	s.log.Info("listening", "addr", s.addr.String())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		s.beginDrain()
		return fmt.Errorf("serve on %s: %w", s.addr, err)
	case <-ctx.Done():
	}
	return s.shutdown(srv, errc)
}

func (s *Server) httpServer() *http.Server {
	return &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// shutdown flips readiness first, then stops accepting and drains.
func (s *Server) shutdown(srv *http.Server, errc <-chan error) error {
	s.beginDrain()
	s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve on %s: %w", s.addr, err)
	}
	s.log.Info("shutdown complete")
	return nil
}

// beginDrain makes readiness fail from now on.
func (s *Server) beginDrain() {
	s.drainOnce.Do(func() {
		s.draining.Store(true)
		close(s.drainCh)
	})
}

// ready reports why the server should not receive traffic, or nil.
func (s *Server) ready() error {
	if s.draining.Load() {
		return errShuttingDown
	}
	if s.journal != nil {
		if err := s.journal.Healthy(); err != nil {
			return fmt.Errorf("journal: %w", err)
		}
	}
	return nil
}

// Close marks the server not ready and closes the journal. Call it after Run
// has returned; it is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.beginDrain()
		if s.journal != nil {
			s.closeErr = s.journal.Close()
		}
	})
	return s.closeErr
}

// router sends the reserved paths to their handlers and everything else to
// the echo handler. Paths are matched exactly and never cleaned or
// redirected, so the echo sees the path as sent.
type router struct {
	reserved map[string]http.Handler
	echo     http.Handler
}

func (s *Server) routes() http.Handler {
	return &router{
		reserved: map[string]http.Handler{
			"/healthz": s.instrument("healthz", true, readOnly(http.HandlerFunc(s.handleHealthz))),
			"/readyz":  s.instrument("readyz", true, readOnly(http.HandlerFunc(s.handleReadyz))),
			"/metrics": s.instrument("metrics", true, readOnly(s.metrics.handler())),
			"/journal": s.instrument("journal", false, readOnly(http.HandlerFunc(s.handleJournal))),
		},
		echo: s.instrument("echo", false, http.HandlerFunc(s.handleEcho)),
	}
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := rt.reserved[r.URL.Path]; ok {
		h.ServeHTTP(w, r)
		return
	}
	rt.echo.ServeHTTP(w, r)
}

// readOnly answers 405 to anything but GET and HEAD.
func readOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method not allowed")
			return
		}
		next.ServeHTTP(w, r)
	})
}
