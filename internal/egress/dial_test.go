package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
)

// Every address these tests dial is refused by the dialer's Control hook,
// which runs before the socket connects, or is on loopback; should the
// policy let another one through, loopbackOnly stops it there and fails
// the test. Host names are looked up in /etc/hosts only (localhost):
// noDNS fails any query.
var noDNS = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("the tests send no DNS queries")
}}

// loopbackOnly is the tests' last line: it refuses, and fails the test
// for, every connection off loopback that the policy let through.
func loopbackOnly(t *testing.T, p *Policy) *Policy {
	p.resolver = noDNS
	p.beforeConnect = func(address string) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			t.Errorf("the policy let a connection to %s through", address)
			return errors.New("the tests connect to loopback only")
		}
		return nil
	}
	return p
}

func guardedDialer(t *testing.T, p *Policy) *net.Dialer {
	d := loopbackOnly(t, p).Dialer()
	d.Resolver = noDNS
	return d
}

func expectRefused(t *testing.T, err error, want string) {
	t.Helper()
	var refused *RefusedError
	if !errors.As(err, &refused) {
		t.Fatalf("got %v, want a refusal by %s", err, want)
	}
	if got := refused.Rule.Name + " " + refused.Rule.Prefix.String(); got != want {
		t.Fatalf("refused by %s, want %s", got, want)
	}
}

// loopbackListener listens on host and tells whether anything but the
// marker connection it opens itself ever connected: connections are
// accepted in order, so a refused dial that did connect would come first.
type loopbackListener struct {
	net.Listener
}

func listen(t *testing.T, host string) *loopbackListener {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return &loopbackListener{l}
}

func (l *loopbackListener) port() string {
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func (l *loopbackListener) expectNothingConnected(t *testing.T) {
	t.Helper()
	marker, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = marker.Close() }()
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = first.Close() }()
	if first.RemoteAddr().String() != marker.LocalAddr().String() {
		t.Fatalf("%s was connected to by %s before the marker", l.Addr(), first.RemoteAddr())
	}
}

func TestDialerRefusesBeforeConnecting(t *testing.T) {
	ctx := context.Background()
	p := New(Config{})
	cases := map[string]string{
		"10.1.2.3:9000":          "private network 10.0.0.0/8",
		"100.64.0.1:9000":        "CGNAT shared address space 100.64.0.0/10",
		"100.100.100.200:80":     "CGNAT shared address space 100.64.0.0/10",
		"169.254.169.254:80":     "link-local 169.254.0.0/16",
		"[fd00::1]:9000":         "unique local fc00::/7",
		"[fd00:ec2::254]:80":     "unique local fc00::/7",
		"[64:ff9b::a00:1]:9000":  "NAT64 64:ff9b::/96",
		"[::ffff:10.0.0.1]:9000": "private network 10.0.0.0/8",
		"192.168.1.1:9000":       "private network 192.168.0.0/16",
	}
	for addr, want := range cases {
		t.Run(addr, func(t *testing.T) {
			conn, err := guardedDialer(t, p).DialContext(ctx, "tcp", addr)
			if conn != nil {
				_ = conn.Close()
			}
			expectRefused(t, err, want)
		})
	}

	loopback := map[string]string{"127.0.0.1": "loopback 127.0.0.0/8", "127.0.0.2": "loopback 127.0.0.0/8", "::1": "loopback ::1/128"}
	for host, want := range loopback {
		t.Run("loopback "+host, func(t *testing.T) {
			l := listen(t, host)
			_, err := guardedDialer(t, p).DialContext(ctx, "tcp", l.Addr().String())
			expectRefused(t, err, want)
			l.expectNothingConnected(t)
		})
	}

	t.Run("0.0.0.0, which Linux connects to this host", func(t *testing.T) {
		l := listen(t, "127.0.0.1")
		_, err := guardedDialer(t, New(Config{Allow: prefixes(t, "127.0.0.0/8")})).DialContext(ctx, "tcp", "0.0.0.0:"+l.port())
		expectRefused(t, err, "unspecified 0.0.0.0/8")
		l.expectNothingConnected(t)
	})
}

func TestDialerChecksTheAddressesANameResolvesTo(t *testing.T) {
	ctx := context.Background()
	l := listen(t, "127.0.0.1")
	_, err := guardedDialer(t, New(Config{})).DialContext(ctx, "tcp", "localhost:"+l.port())
	expectRefused(t, err, "loopback 127.0.0.0/8")
	l.expectNothingConnected(t)

	conn, err := guardedDialer(t, New(Config{Allow: prefixes(t, "127.0.0.1/32")})).DialContext(ctx, "tcp", "localhost:"+l.port())
	if err != nil {
		t.Fatalf("an allowed address is refused: %v", err)
	}
	_ = conn.Close()
}

// countingServer is an HTTP server on host that counts the requests it
// gets, by Host header, and answers them with handler (200 when nil).
type countingServer struct {
	*httptest.Server
	mu    sync.Mutex
	hosts []string
}

func newCountingServer(t *testing.T, host string, handler http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hosts = append(s.hosts, r.Host)
		s.mu.Unlock()
		if handler != nil {
			handler(w, r)
		}
	}))
	s.Listener = listen(t, host).Listener
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.hosts...)
}

func transportOf(t *testing.T, p *Policy) *http.Transport {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
	loopbackOnly(t, p).ConfigureTransport(tr)
	if tr.DialContext == nil {
		t.Fatal("no dialer set")
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func get(tr *http.Transport, rawURL string) (int, error) {
	resp, err := (&http.Client{Transport: tr}).Get(rawURL)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

func TestTransportWithoutProxyDialsThroughThePolicyAndIgnoresTheEnvironment(t *testing.T) {
	target := newCountingServer(t, "127.0.0.2", nil)

	tr := transportOf(t, New(Config{}))
	if tr.Proxy != nil {
		t.Fatal("the transport keeps a proxy: the environment's HTTP_PROXY would carry the requests past the policy")
	}
	_, err := get(tr, target.URL)
	expectRefused(t, err, "loopback 127.0.0.0/8")
	if got := target.requests(); len(got) != 0 {
		t.Fatalf("the refused server got %v", got)
	}

	tr = transportOf(t, New(Config{Allow: prefixes(t, "127.0.0.2/32")}))
	if code, err := get(tr, target.URL); err != nil || code != http.StatusOK {
		t.Fatalf("an allowed server: %d, %v", code, err)
	}
	if got := target.requests(); len(got) != 1 {
		t.Fatalf("the allowed server got %v, want one request", got)
	}
}

// A redirect to a refused address is refused when the client follows it:
// every connection goes through the dialer, whatever sent the client
// there.
func TestTransportRefusesARedirectToARefusedAddress(t *testing.T) {
	target := newCountingServer(t, "127.0.0.2", nil)
	redirector := newCountingServer(t, "127.0.0.1", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/latest/meta-data/", http.StatusTemporaryRedirect)
	})
	tr := transportOf(t, New(Config{Allow: prefixes(t, "127.0.0.1/32")}))
	_, err := get(tr, redirector.URL+"/bucket")
	expectRefused(t, err, "loopback 127.0.0.0/8")
	if got := redirector.requests(); len(got) != 1 {
		t.Errorf("the redirecting server got %v, want one request", got)
	}
	if got := target.requests(); len(got) != 0 {
		t.Errorf("the redirect's target got %v", got)
	}
}
