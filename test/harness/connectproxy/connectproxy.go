package connectproxy

import (
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a running proxy.
type Proxy struct {
	// URL is the proxy's, http://127.0.0.1:port.
	URL *url.URL
	// Auth, when set before the first request, is the Proxy-Authorization
	// header every request must carry (407 otherwise).
	Auth string

	server  *httptest.Server
	mu      sync.Mutex
	targets []string // the tunnels opened, by target
	refused []string // what was refused: "METHOD target"
	conns   []net.Conn
}

// Start runs a proxy on 127.0.0.1 until the test ends.
func Start(tb testing.TB) *Proxy {
	tb.Helper()
	p := &Proxy{}
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	return p.started(tb)
}

// StartTLS is Start with the proxy on HTTPS, https://127.0.0.1:port,
// with httptest's certificate (Certificate): for 127.0.0.1, ::1 and
// example.com.
func StartTLS(tb testing.TB) *Proxy {
	tb.Helper()
	p := &Proxy{}
	p.server = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	return p.started(tb)
}

func (p *Proxy) started(tb testing.TB) *Proxy {
	tb.Helper()
	u, err := url.Parse(p.server.URL)
	if err != nil {
		tb.Fatal(err)
	}
	p.URL = u
	tb.Cleanup(p.close)
	return p
}

// Certificate is the certificate of a proxy on HTTPS.
func (p *Proxy) Certificate() *x509.Certificate {
	return p.server.Certificate()
}

// Targets are the addresses the proxy opened tunnels to, in order.
func (p *Proxy) Targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

// Refused are the requests the proxy refused, each "METHOD target".
func (p *Proxy) Refused() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.refused...)
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	if p.Auth != "" && r.Header.Get("Proxy-Authorization") != p.Auth {
		p.refuse(w, r, http.StatusProxyAuthRequired)
		return
	}
	target, err := netip.ParseAddrPort(r.Host)
	if r.Method != http.MethodConnect || err != nil || !target.Addr().Unmap().IsLoopback() {
		p.refuse(w, r, http.StatusForbidden)
		return
	}
	upstream, err := net.Dial("tcp", target.String())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	p.opened(r.Host, client, upstream)
	_, _ = io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n")
	go pipe(client, upstream)
	go pipe(upstream, client)
}

func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, status int) {
	p.mu.Lock()
	p.refused = append(p.refused, r.Method+" "+r.Host)
	p.mu.Unlock()
	http.Error(w, http.StatusText(status), status)
}

func (p *Proxy) opened(target string, conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.targets = append(p.targets, target)
	p.conns = append(p.conns, conns...)
}

// pipe copies from src to dst, and closes both once either side ends.
func pipe(dst, src net.Conn) {
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

func (p *Proxy) close() {
	p.server.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}
