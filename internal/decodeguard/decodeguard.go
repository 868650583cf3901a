package decodeguard

import (
	"compress/gzip"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Guard decodes the objects of one API group as they come from the API
// server and keeps those that fail away from the client.
type Guard struct {
	group   string
	scheme  *runtime.Scheme
	decoder runtime.Decoder
	report  func(Rejection)
}

// New returns a guard of the objects of group, decoded with the types of
// scheme; report is called for every object the guard rejects.
func New(scheme *runtime.Scheme, group string, report func(Rejection)) *Guard {
	if report == nil {
		report = func(Rejection) {}
	}
	return &Guard{
		group:  group,
		scheme: scheme,
		// The serializer client-go decodes JSON with: case-sensitive,
		// unknown fields ignored, no conversion.
		decoder: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{}),
		report:  report,
	}
}

// NewCache returns a cache constructor that builds its caches with next,
// their requests to group going through a Guard that reports to report.
//
// Only the cache is guarded: the manager's client and API reader keep the
// HTTP client they share, so a write never loses what it sent.
func NewCache(group string, report func(Rejection), next cache.NewCacheFunc) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		httpClient := opts.HTTPClient
		if httpClient == nil {
			var err error
			if httpClient, err = rest.HTTPClientFor(cfg); err != nil {
				return nil, fmt.Errorf("building the cache's HTTP client: %w", err)
			}
		}
		scheme := opts.Scheme
		if scheme == nil {
			// The scheme cache.New falls back to.
			scheme = clientgoscheme.Scheme
		}
		opts.HTTPClient = New(scheme, group, report).Client(httpClient)
		return next(cfg, opts)
	}
}

// Client returns a copy of c whose requests go through the guard.
func (g *Guard) Client(c *http.Client) *http.Client {
	guarded := *c
	guarded.Transport = g.Wrap(c.Transport)
	return &guarded
}

// Wrap returns a round tripper that sends requests through next and guards
// the responses.
func (g *Guard) Wrap(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &roundTripper{guard: g, next: next}
}

type roundTripper struct {
	guard *Guard
	next  http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := rt.guard.classify(req)
	resp, err := rt.next.RoundTrip(req)
	if err != nil || kind == otherRequest || !guardable(resp) {
		return resp, err
	}
	if kind == watchRequest {
		return rt.guard.guardWatch(resp), nil
	}
	return rt.guard.guardList(resp)
}

// WrappedRoundTripper lets client-go reach the transport underneath, as
// its own wrappers do.
func (rt *roundTripper) WrappedRoundTripper() http.RoundTripper { return rt.next }

type requestKind int

const (
	otherRequest requestKind = iota
	listRequest
	watchRequest
)

// classify tells a list or a watch of a resource of the group from any
// other request, by its path: /apis/<group>/<version>[/watch]/<resource>
// or /apis/<group>/<version>[/watch]/namespaces/<namespace>/<resource>.
func (g *Guard) classify(req *http.Request) requestKind {
	if req.Method != http.MethodGet {
		return otherRequest
	}
	_, rest, ok := strings.Cut(req.URL.Path, "/apis/"+g.group+"/")
	if !ok {
		return otherRequest
	}
	segments := strings.Split(strings.Trim(rest, "/"), "/")[1:] // after the version
	legacyWatch := len(segments) > 0 && segments[0] == "watch"
	if legacyWatch {
		segments = segments[1:]
	}
	if len(segments) != 1 && (len(segments) != 3 || segments[0] != "namespaces") {
		return otherRequest
	}
	if watch, _ := strconv.ParseBool(req.URL.Query().Get("watch")); watch || legacyWatch {
		return watchRequest
	}
	return listRequest
}

// guardable tells whether the guard can read a response: a success in
// JSON, plain or gzipped. Anything else (an error status, a Table or
// metadata-only rendering, another encoding) passes through as it came.
func guardable(resp *http.Response) bool {
	if resp.StatusCode != http.StatusOK {
		return false
	}
	mediaType, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" || params["as"] != "" {
		return false
	}
	switch resp.Header.Get("Content-Encoding") {
	case "", "identity", "gzip":
		return true
	}
	return false
}

func isGzipped(resp *http.Response) bool {
	return resp.Header.Get("Content-Encoding") == "gzip"
}

// plainBody returns a response body without its content encoding.
func plainBody(body io.Reader, gzipped bool) (io.Reader, error) {
	if !gzipped {
		return body, nil
	}
	zr, err := gzip.NewReader(body)
	if err != nil {
		return nil, fmt.Errorf("reading a gzipped response: %w", err)
	}
	return zr, nil
}

// markRewritten updates the headers of a response whose body the guard
// replaced with a plain one of unknown length.
func markRewritten(resp *http.Response) {
	if isGzipped(resp) {
		resp.Uncompressed = true
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
}
