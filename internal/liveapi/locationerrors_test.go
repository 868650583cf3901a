package liveapi

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/egress"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
	"github.com/echo-operator/echo-operator/test/harness/connectproxy"
)

// A remote answer the tenant must never read back.
const remoteSecret = "internal-admin-token-0123"

func TestPublicReasonIsOneOfTheFixedOutcomes(t *testing.T) {
	refused := egress.New(egress.Config{}).Check(netip.MustParseAddr("10.1.2.3"))
	s3Answer := func(status int, code string) error {
		return minio.ErrorResponse{StatusCode: status, Code: code, Message: remoteSecret, Server: remoteSecret}
	}
	dial := func(err error) error {
		return &url.Error{Op: "Get", URL: "http://10.1.2.3:9000/b", Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	cases := map[string]struct {
		err  error
		want string
	}{
		"refused by the policy": {dial(refused),
			"the operator does not connect to 10.1.2.3: private network 10.0.0.0/8 (allow it with --storage-egress-allow)"},
		"the location's own error": {&locationError{errors.New(`reading the credentials Secret s3: secrets "s3" not found`)},
			`reading the credentials Secret s3: secrets "s3" not found`},
		"access denied": {errors.Join(backupstore.ErrAccessDenied, s3Answer(403, "AccessDenied")), outcomeAccessDenied},
		"no bucket":     {errors.Join(backupstore.ErrBucketNotFound, s3Answer(404, "NoSuchBucket")), outcomeNoBucket},
		"a server error": {errors.Join(backupstore.ErrUnavailable, s3Answer(503, "SlowDown")),
			outcomeNotS3 + " (HTTP 5xx)"},
		"a page that is no S3 answer": {fmt.Errorf("s3 list: %w", s3Answer(502, "502 Bad Gateway")), outcomeNotS3 + " (HTTP 5xx)"},
		"a redirect":                  {fmt.Errorf("s3 list: %w", s3Answer(307, "307 Temporary Redirect")), outcomeNotS3 + " (HTTP 3xx)"},
		"a body that is no XML":       {fmt.Errorf("s3 list: %w", &xml.SyntaxError{Msg: remoteSecret, Line: 1}), outcomeNotS3},
		"connection refused":          {errors.Join(backupstore.ErrUnavailable, dial(syscall.ECONNREFUSED)), outcomeUnreachable},
		"connection reset":            {errors.Join(backupstore.ErrUnavailable, dial(syscall.ECONNRESET)), outcomeUnreachable},
		"no route":                    {errors.Join(backupstore.ErrUnavailable, dial(syscall.EHOSTUNREACH)), outcomeUnreachable},
		"a timeout":                   {fmt.Errorf("the storage did not answer within 20s: %w", context.DeadlineExceeded), outcomeUnreachable},
		"no such host": {errors.Join(backupstore.ErrUnavailable, dial(&net.DNSError{Err: "no such host", Name: "minio.other-team.svc", IsNotFound: true})),
			outcomeUnreachable},
		"an untrusted certificate": {&url.Error{Op: "Get", URL: "https://s3.example.com", Err: errors.New("tls: failed to verify certificate: x509: " + remoteSecret)},
			outcomeUnreachable},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := publicReason(c.err); got != c.want {
				t.Errorf("publicReason = %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestListingErrorIsServiceUnavailableNamingTheLocation(t *testing.T) {
	loc := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "offsite"}}
	err := listingError(loc, errors.Join(backupstore.ErrUnavailable, errors.New("dial tcp 10.0.0.5:9000: connect: connection refused")))
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("listingError = %v, want 503", err)
	}
	if want := "EchoBackupLocation team-a/offsite: " + outcomeUnreachable; err.Error() != want {
		t.Errorf("listingError = %q\nwant %q", err, want)
	}
}

// The listings below go through the real S3 client to servers on
// loopback, the only addresses the tests connect to: the endpoints off
// loopback are only ever given with a proxy, itself on loopback, so that
// even a broken policy would send nothing elsewhere. Endpoints are
// addressed path-style: a bucket as a host name would be looked up in
// DNS.

// s3Stub is an HTTP server on host that answers every request with
// answer, and counts them.
type s3Stub struct {
	*httptest.Server
	requests atomic.Int32
}

func newS3Stub(t *testing.T, host string, answer http.HandlerFunc) *s3Stub {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	s := &s3Stub{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		answer(w, r)
	}))
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *s3Stub) port() string {
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	return port
}

func answerWith(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}
}

func s3Error(code string) string {
	return `<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + code + `</Code><Message>` + remoteSecret + `</Message></Error>`
}

// listAt lists a location of endpoint with policy, and returns the error.
func listAt(t *testing.T, ctx context.Context, policy *egress.Policy, endpoint string) error {
	t.Helper()
	loc := &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "offsite", ResourceVersion: "1"},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{
			Endpoint: endpoint, Bucket: "backups", ForcePathStyle: true,
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3", AccessKeyIDKey: "id", SecretAccessKeyKey: "secret"},
		}},
	}
	api := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "s3", Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		Data:       map[string][]byte{"id": []byte("AKID"), "secret": []byte("tenant-secret-key")},
	}).Build()
	_, err := newLocationListings(api, policy, storagesecrets.ClusterEndpoints{}, defaultListingLimits).list(ctx, loc)
	if err == nil {
		t.Fatalf("listing %s succeeded", endpoint)
	}
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("listing %s = %v, want 503", endpoint, err)
	}
	if strings.Contains(err.Error(), remoteSecret) || strings.Contains(err.Error(), "tenant-secret-key") {
		t.Fatalf("listing %s = %v, which carries the answer or the credentials", endpoint, err)
	}
	return err
}

func expectMessage(t *testing.T, err error, want string) {
	t.Helper()
	if want = "EchoBackupLocation team-a/offsite: " + want; err.Error() != want {
		t.Errorf("message = %q\nwant %q", err.Error(), want)
	}
}

func TestListingsRefuseLoopbackByDefault(t *testing.T) {
	ctx := context.Background()
	other := newS3Stub(t, "127.0.0.2", answerWith(200, ""))
	expectMessage(t, listAt(t, ctx, nil, other.URL),
		"the operator does not connect to 127.0.0.2: loopback 127.0.0.0/8 (allow it with --storage-egress-allow)")

	// A name that resolves to loopback (from /etc/hosts).
	local := newS3Stub(t, "127.0.0.1", answerWith(200, ""))
	expectMessage(t, listAt(t, ctx, &egress.Policy{}, "http://localhost:"+local.port()),
		"the operator does not connect to 127.0.0.1: loopback 127.0.0.0/8 (allow it with --storage-egress-allow)")

	if n := other.requests.Load() + local.requests.Load(); n != 0 {
		t.Errorf("the refused servers got %d requests", n)
	}
}

func TestListingsTellOnlyTheOutcome(t *testing.T) {
	ctx := context.Background()
	allowLoopback := egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	cases := map[string]struct {
		answer http.HandlerFunc
		want   string
	}{
		"access denied":  {answerWith(403, s3Error("AccessDenied")), outcomeAccessDenied},
		"no bucket":      {answerWith(404, s3Error("NoSuchBucket")), outcomeNoBucket},
		"a server error": {answerWith(500, "<html>"+remoteSecret+"</html>"), outcomeNotS3 + " (HTTP 5xx)"},
		"a teapot":       {answerWith(418, remoteSecret), outcomeNotS3 + " (HTTP 4xx)"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			stub := newS3Stub(t, "127.0.0.1", c.answer)
			expectMessage(t, listAt(t, ctx, allowLoopback, stub.URL), c.want)
			if stub.requests.Load() == 0 {
				t.Error("the storage was not asked")
			}
		})
	}

	t.Run("a closed port and a silent one look the same", func(t *testing.T) {
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closedAddr := closed.Addr().String()
		_ = closed.Close()
		silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = silent.Close() })

		refusedErr := listAt(t, ctx, allowLoopback, "http://"+closedAddr)
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		timeoutErr := listAt(t, short, allowLoopback, "http://"+silent.Addr().String())
		expectMessage(t, refusedErr, outcomeUnreachable)
		expectMessage(t, timeoutErr, outcomeUnreachable)
	})
}

// The S3 client does not follow redirects, and would dial through the
// policy if it did: a redirect to a refused address reaches nothing.
func TestListingsDoNotFollowARedirect(t *testing.T) {
	target := newS3Stub(t, "127.0.0.2", answerWith(200, ""))
	redirector := newS3Stub(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	})
	allowLoopback := egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	expectMessage(t, listAt(t, context.Background(), allowLoopback, redirector.URL), outcomeNotS3+" (HTTP 3xx)")
	if redirector.requests.Load() == 0 {
		t.Error("the redirecting server was not asked")
	}
	if n := target.requests.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

// Through a proxy, the endpoint's addresses are checked before the proxy
// is asked anything; an allowed endpoint is reached through a tunnel the
// proxy opens to the checked address, not directly.
func TestListingsThroughAProxy(t *testing.T) {
	ctx := context.Background()
	proxy := connectproxy.Start(t)
	policy := egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}, Proxy: proxy.URL})
	refused := map[string]string{
		"http://10.1.2.3:9000":       "the operator does not connect to 10.1.2.3: private network 10.0.0.0/8 (allow it with --storage-egress-allow)",
		"http://100.64.0.1:9000":     "the operator does not connect to 100.64.0.1: CGNAT shared address space 100.64.0.0/10 (allow it with --storage-egress-allow)",
		"http://[fd00::1]:9000":      "the operator does not connect to fd00::1: unique local fc00::/7 (allow it with --storage-egress-allow)",
		"http://localhost:9000":      "the operator does not connect to 127.0.0.1: loopback 127.0.0.0/8 (allow it with --storage-egress-allow)",
		"https://169.254.169.254":    "the operator does not connect to 169.254.169.254: link-local 169.254.0.0/16 (allow it with --storage-egress-allow)",
		"http://[::ffff:a00:1]:9000": "the operator does not connect to 10.0.0.1: private network 10.0.0.0/8 (allow it with --storage-egress-allow)",
		"http://" + proxy.URL.Host:   "the operator does not connect to 127.0.0.1: loopback 127.0.0.0/8 (allow it with --storage-egress-allow)",
	}
	for endpoint, want := range refused {
		expectMessage(t, listAt(t, ctx, policy, endpoint), want)
	}
	if got, refused := proxy.Targets(), proxy.Refused(); len(got) != 0 || len(refused) != 0 {
		t.Fatalf("the proxy was asked for %v and refused %v for refused endpoints", got, refused)
	}

	storage := newS3Stub(t, "127.0.0.2", answerWith(403, s3Error("AccessDenied")))
	expectMessage(t, listAt(t, ctx, policy, storage.URL), outcomeAccessDenied)
	want := "127.0.0.2:" + storage.port()
	if got := proxy.Targets(); len(got) == 0 || slices.ContainsFunc(got, func(s string) bool { return s != want }) || storage.requests.Load() == 0 {
		t.Errorf("the proxy opened tunnels to %v and the storage got %d requests, want tunnels to %s only", got, storage.requests.Load(), want)
	}
}
