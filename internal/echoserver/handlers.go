package echoserver

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"strconv"
	"time"
)

const ndjsonContentType = "application/x-ndjson"

// handleHealthz reports liveness: the process is up and serving HTTP.
func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "ok")
}

// handleReadyz reports 200 while the server should receive traffic and 503
// with the reason otherwise.
func (s *Server) handleReadyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.ready(); err != nil {
		writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	writeText(w, http.StatusOK, "ok")
}

// handleJournal streams the complete lines of a journal file: this
// instance's, or the one named by the "instance" query parameter.
func (s *Server) handleJournal(w http.ResponseWriter, r *http.Request) {
	if s.journal == nil {
		writeError(w, http.StatusNotFound, "persistence is disabled")
		return
	}
	f, size, err := s.journal.Snapshot(r.URL.Query().Get("instance"))
	switch {
	case errors.Is(err, ErrInvalidInstance):
		writeError(w, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, fs.ErrNotExist):
		writeError(w, http.StatusNotFound, "no journal for this instance")
		return
	case err != nil:
		s.log.Error("open journal for reading", "error", err)
		writeError(w, http.StatusInternalServerError, "cannot read journal")
		return
	}
	defer func() {
		if err := f.Close(); err != nil {
			s.log.Warn("close journal snapshot", "error", err)
		}
	}()

	h := w.Header()
	h.Set("Content-Type", ndjsonContentType)
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// A journal may be larger than the server-wide write timeout allows.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, size)); err != nil {
		s.log.Warn("stream journal", "error", err)
	}
}

// errorBody is the JSON body of every error response.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code = http.StatusInternalServerError
		b = []byte(`{"error":"cannot encode response"}`)
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func writeText(w http.ResponseWriter, code int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(msg)))
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}
