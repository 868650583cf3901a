package decodeguard

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

const schedules = "/apis/echo.dev/v1alpha1/namespaces/team-a/echobackupschedules"

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(echov1alpha1.AddToScheme(s))
	return s
}

// schedule is an EchoBackupSchedule as the API server encodes it; maxAge
// "7d" is one an older schema admitted and metav1.Duration cannot parse.
func schedule(name, maxAge string) string {
	return `{"apiVersion":"echo.dev/v1alpha1","kind":"EchoBackupSchedule",` +
		`"metadata":{"name":"` + name + `","namespace":"team-a","uid":"uid-` + name + `","resourceVersion":"7",` +
		`"labels":{"team":"a"}},` +
		`"spec":{"schedule":"@daily","retention":{"maxAge":"` + maxAge + `"},"template":{"echoName":"web"}}}`
}

func scheduleList(items ...string) string {
	return `{"apiVersion":"echo.dev/v1alpha1","items":[` + strings.Join(items, ",") +
		`],"kind":"EchoBackupScheduleList","metadata":{"continue":"next-page","resourceVersion":"42"}}`
}

// reports collects the rejections a guard reports.
type reports struct {
	mu   sync.Mutex
	seen []Rejection
}

func (r *reports) add(rej Rejection) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, rej)
}

func (r *reports) all() []Rejection {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Rejection(nil), r.seen...)
}

func newTestGuard() (*Guard, *reports) {
	r := &reports{}
	return New(testScheme(), echov1alpha1.GroupVersion.Group, r.add), r
}

// serverResponse stands for the API server: it answers every request with
// body, as JSON unless header says otherwise.
func serverResponse(status int, body io.ReadCloser, header http.Header) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		h := http.Header{"Content-Type": []string{"application/json"}}
		for k, v := range header {
			h[k] = v
		}
		return &http.Response{StatusCode: status, Header: h, Body: body, ContentLength: -1, Request: req}, nil
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// get sends a GET of path through the guard to a server answering body.
func get(t *testing.T, g *Guard, path string, body string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	return send(t, g, http.MethodGet, path, serverResponse(http.StatusOK, io.NopCloser(strings.NewReader(body)), header))
}

func send(t *testing.T, g *Guard, method, path string, server http.RoundTripper) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, "https://api.example.test"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := g.Wrap(server).RoundTrip(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response to %s %s: %v", method, path, err)
	}
	return resp, got
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("invalid JSON %q: %v", s, err)
	}
	return b.String()
}
