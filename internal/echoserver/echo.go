package echoserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// echoAllow lists the methods advertised in answer to OPTIONS; every method
// is echoed, these are the usual ones.
const echoAllow = "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS"

// EchoResponse is the JSON body of an echo response.
type EchoResponse struct {
	Message    string              `json:"message"`
	Instance   string              `json:"instance"`
	Method     string              `json:"method"`
	Path       string              `json:"path"`
	Query      string              `json:"query"` // raw query string, without '?'
	Headers    map[string][]string `json:"headers"`
	Body       string              `json:"body"`
	Host       string              `json:"host"`
	RemoteAddr string              `json:"remoteAddr"`
	// Sequence is the request's journal sequence number; it is omitted when
	// persistence is off or the request was not journaled (HEAD).
	Sequence uint64 `json:"sequence,omitempty"`
}

// handleEcho answers with a description of the request. OPTIONS gets 204 and
// an Allow header; HEAD gets the headers of the GET answer and is not
// journaled. Every other request is journaled, when persistence is on,
// before it is answered.
func (s *Server) handleEcho(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		w.Header().Set("Allow", echoAllow)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	body, status, err := s.readBody(w, r)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	resp := s.describe(r, body)
	if r.Method != http.MethodHead {
		if resp.Sequence, err = s.record(r, body); err != nil {
			writeError(w, http.StatusInternalServerError, "cannot journal request")
			return
		}
	}
	writeJSON(w, http.StatusOK, resp)
}

// readBody reads the whole request body, refusing more than MaxBodyBytes.
// On failure it also returns the status code to answer with.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body exceeds %d bytes", limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body exceeds %d bytes", limit)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("read request body: %w", err)
	}
	return body, http.StatusOK, nil
}

func (s *Server) describe(r *http.Request, body []byte) EchoResponse {
	headers := map[string][]string(r.Header)
	if headers == nil {
		headers = map[string][]string{}
	}
	return EchoResponse{
		Message:    s.cfg.Message,
		Instance:   s.cfg.Instance,
		Method:     r.Method,
		Path:       r.URL.Path,
		Query:      r.URL.RawQuery,
		Headers:    headers,
		Body:       string(body),
		Host:       r.Host,
		RemoteAddr: r.RemoteAddr,
	}
}

// record appends the request to the journal and returns its sequence
// number, or 0 when persistence is off.
func (s *Server) record(r *http.Request, body []byte) (uint64, error) {
	if s.journal == nil {
		return 0, nil
	}
	e, err := s.journal.Append(NewEntry(r.Method, r.URL.Path, body, s.cfg.Message))
	if err != nil {
		s.metrics.journalErrors.Inc()
		s.log.Error("journal append failed", "error", err)
		return 0, fmt.Errorf("record request: %w", err)
	}
	s.metrics.journalEntries.Inc()
	return e.Seq, nil
}
