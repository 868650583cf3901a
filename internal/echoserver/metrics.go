package echoserver

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const metricsNamespace = "echo"

// metrics holds the server's collectors in a registry of its own, so that
// every Server (and every test) starts from zero.
type metrics struct {
	registry       *prometheus.Registry
	requests       *prometheus.CounterVec   // handler, method, code
	duration       *prometheus.HistogramVec // handler, method
	inFlight       prometheus.Gauge
	journalEntries prometheus.Counter
	journalErrors  prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "http_requests_total",
			Help:      "HTTP requests served, by handler, method and status code.",
		}, []string{"handler", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: metricsNamespace,
			Name:      "http_request_duration_seconds",
			Help:      "Time to serve HTTP requests, by handler and method.",
			Buckets:   prometheus.DefBuckets,
		}, []string{"handler", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: metricsNamespace,
			Name:      "http_requests_in_flight",
			Help:      "HTTP requests currently being served.",
		}),
		journalEntries: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "journal_entries_total",
			Help:      "Entries durably appended to the journal.",
		}),
		journalErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: metricsNamespace,
			Name:      "journal_write_errors_total",
			Help:      "Journal appends that failed; the request was answered with 500.",
		}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.duration, m.inFlight, m.journalEntries, m.journalErrors,
	)
	return m
}

// watchJournal exports the size of the journal, read at each scrape.
func (m *metrics) watchJournal(j *Journal) {
	m.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: metricsNamespace,
		Name:      "journal_bytes",
		Help:      "Bytes of complete entries in this instance's journal file.",
	}, func() float64 { return float64(j.Size()) }))
}

// handler serves the registry in the Prometheus exposition formats.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		Registry:      m.registry,
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// instrument wraps next so that each request is counted, timed and logged
// under the given handler name. Probe and scrape traffic is logged at debug
// level only.
func (s *Server) instrument(name string, quiet bool, next http.Handler) http.Handler {
	level := slog.LevelInfo
	if quiet {
		level = slog.LevelDebug
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.metrics.inFlight.Inc()
		defer s.metrics.inFlight.Dec()

		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)

		elapsed := time.Since(start)
		method := methodLabel(r.Method)
		s.metrics.requests.WithLabelValues(name, method, strconv.Itoa(sw.code())).Inc()
		s.metrics.duration.WithLabelValues(name, method).Observe(elapsed.Seconds())
		s.log.Log(r.Context(), level, "request",
			"handler", name, "method", r.Method, "path", r.URL.Path,
			"status", sw.code(), "durationSeconds", elapsed.Seconds(), "remoteAddr", r.RemoteAddr)
	})
}

// methodLabel bounds the cardinality of the method label: anything but the
// standard methods is reported as "OTHER".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodConnect,
		http.MethodOptions, http.MethodTrace:
		return method
	default:
		return "OTHER"
	}
}

// statusWriter records the final status code written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= http.StatusOK { // 1xx responses are not final
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter {
	return w.ResponseWriter
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
