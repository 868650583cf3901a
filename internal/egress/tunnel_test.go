package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/echo-operator/echo-operator/test/harness/connectproxy"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// rebinding is a DNS that answers each lookup with the next of its
// answers, whatever the name, and the last one for good: a tenant's name
// that answers an allowed address first and a denied one next.
type rebinding struct {
	mu      sync.Mutex
	answers [][]netip.Addr
	lookups []string
}

func answers(addrs ...string) *rebinding {
	r := &rebinding{}
	for _, a := range addrs {
		var answer []netip.Addr
		for _, field := range strings.Split(a, ",") {
			answer = append(answer, netip.MustParseAddr(field))
		}
		r.answers = append(r.answers, answer)
	}
	return r
}

func (r *rebinding) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	answer := r.answers[min(len(r.lookups), len(r.answers)-1)]
	r.lookups = append(r.lookups, host)
	return slices.Clone(answer), nil
}

func (r *rebinding) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.lookups)
}

// proxiedTransport is a transport configured by p, through proxy, whose
// host names dns resolves; every connection is a new one, and so a new
// lookup.
func proxiedTransport(t *testing.T, p *Policy, proxy *url.URL, dns resolver, tlsConfig *tls.Config) *http.Transport {
	t.Helper()
	p.proxy = proxy
	loopbackOnly(t, p).resolver = dns
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig, DisableKeepAlives: true}
	p.ConfigureTransport(tr)
	if tr.Proxy != nil {
		t.Fatal("the transport keeps a proxy of its own: the proxy would be given the host name")
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func expectNothingAsked(t *testing.T, proxy *connectproxy.Proxy) {
	t.Helper()
	if got, refused := proxy.Targets(), proxy.Refused(); len(got) != 0 || len(refused) != 0 {
		t.Fatalf("the proxy was asked for %v and refused %v, want nothing", got, refused)
	}
}

// The proxy is asked for the address that was checked, never for the
// name, which it would resolve again: a name whose next answer is denied
// reaches the allowed address once, and the proxy never hears of the
// denied one.
func TestTunnelAsksTheProxyForTheCheckedAddress(t *testing.T) {
	target := newCountingServer(t, "127.0.0.2", nil)
	proxy := connectproxy.Start(t)
	dns := answers("127.0.0.2", "127.0.0.1")
	tr := proxiedTransport(t, New(Config{Allow: prefixes(t, "127.0.0.2/32")}), proxy.URL, dns, nil)
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())

	if code, err := get(tr, "http://storage.test:"+port+"/bucket"); err != nil || code != http.StatusOK {
		t.Fatalf("an allowed name through the proxy: %d, %v", code, err)
	}
	if got := proxy.Targets(); !slices.Equal(got, []string{"127.0.0.2:" + port}) {
		t.Fatalf("the proxy was asked for %v, want 127.0.0.2:%s", got, port)
	}
	if got := target.requests(); !slices.Equal(got, []string{"storage.test:" + port}) {
		t.Fatalf("the server got requests for %v, want one for storage.test:%s", got, port)
	}
	if dns.count() != 1 {
		t.Fatalf("the connection looked its host up %d times, want once", dns.count())
	}

	_, err := get(tr, "http://storage.test:"+port+"/bucket")
	expectRefused(t, err, "loopback 127.0.0.0/8")
	if got, refused := proxy.Targets(), proxy.Refused(); len(got) != 1 || len(refused) != 0 {
		t.Fatalf("after the denied answer the proxy was asked for %v and refused %v", got, refused)
	}
	if dns.count() != 2 {
		t.Fatalf("two connections looked their host up %d times, want once each", dns.count())
	}
}

// Every address of the answer must be allowed: the first denied one
// refuses the connection before the proxy is asked anything.
func TestTunnelRefusesBeforeAskingTheProxy(t *testing.T) {
	proxy := connectproxy.Start(t)
	p := New(Config{Allow: prefixes(t, "127.0.0.2/32")})
	refused := map[string]string{
		"http://10.1.2.3:9000/bucket":       "private network 10.0.0.0/8",
		"http://100.100.100.200/latest":     "CGNAT shared address space 100.64.0.0/10",
		"http://[fd00::1]:9000/bucket":      "unique local fc00::/7",
		"http://127.0.0.3:9000/bucket":      "loopback 127.0.0.0/8",
		"http://localhost:9000/bucket":      "loopback 127.0.0.0/8",
		"http://[::ffff:a9fe:a9fe]/latest/": "link-local 169.254.0.0/16",
		"https://169.254.169.254/latest/":   "link-local 169.254.0.0/16",
	}
	for u, want := range refused {
		_, err := get(proxiedTransport(t, p, proxy.URL, noDNS, nil), u)
		expectRefused(t, err, want)
	}
	names := map[string]string{
		"127.0.0.2,127.0.0.1":       "loopback 127.0.0.0/8",
		"127.0.0.2,169.254.169.254": "link-local 169.254.0.0/16",
		"::ffff:10.96.0.1":          "private network 10.0.0.0/8",
	}
	for answer, want := range names {
		_, err := get(proxiedTransport(t, p, proxy.URL, answers(answer), nil), "http://storage.test:9000/bucket")
		expectRefused(t, err, want)
	}
	var dnsErr *net.DNSError
	if _, err := get(proxiedTransport(t, p, proxy.URL, noDNS, nil), "http://minio.tenant.svc.cluster.local:9000/"); !errors.As(err, &dnsErr) {
		t.Fatalf("a name that does not resolve: %v, want a DNS error", err)
	}
	expectNothingAsked(t, proxy)
}

// Through the tunnel to the checked address, TLS verifies the storage's
// certificate for the host name, which the server gets as SNI and Host.
func TestTunnelVerifiesTheCertificateForTheHostName(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	target := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.TLS.ServerName+" "+r.Host)
		mu.Unlock()
	}))
	target.Listener = listen(t, "127.0.0.2").Listener
	// httptest's certificate is for example.com, 127.0.0.1 and ::1: not
	// for 127.0.0.2, the address connected to.
	target.StartTLS()
	t.Cleanup(target.Close)
	roots := x509.NewCertPool()
	roots.AddCert(target.Certificate())
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	proxy := connectproxy.Start(t)
	p := New(Config{Allow: prefixes(t, "127.0.0.2/32")})

	tr := proxiedTransport(t, p, proxy.URL, answers("127.0.0.2"), &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	if code, err := get(tr, "https://example.com:"+port+"/bucket"); err != nil || code != http.StatusOK {
		t.Fatalf("https through the proxy: %d, %v", code, err)
	}
	mu.Lock()
	got := slices.Clone(seen)
	mu.Unlock()
	if want := []string{"example.com example.com:" + port}; !slices.Equal(got, want) {
		t.Fatalf("the server saw SNI and Host %v, want %v", got, want)
	}

	tr = proxiedTransport(t, p, proxy.URL, answers("127.0.0.2"), &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	_, err := get(tr, "https://storage.test:"+port+"/bucket")
	var hostErr x509.HostnameError
	if !errors.As(err, &hostErr) {
		t.Fatalf("a name the certificate is not for: %v, want a host name error", err)
	}
	if want := []string{"127.0.0.2:" + port, "127.0.0.2:" + port}; !slices.Equal(proxy.Targets(), want) {
		t.Fatalf("the proxy was asked for %v, want %v", proxy.Targets(), want)
	}
}

// The proxy URL's credentials go to the proxy, and into no error.
func TestTunnelAuthenticatesToTheProxy(t *testing.T) {
	target := newCountingServer(t, "127.0.0.2", nil)
	proxy := connectproxy.Start(t)
	proxy.Auth = "Basic " + base64.StdEncoding.EncodeToString([]byte("operator:s3cr3t"))
	p := New(Config{Allow: prefixes(t, "127.0.0.2/32")})

	tr := proxiedTransport(t, p, proxy.URL, noDNS, nil)
	_, err := get(tr, target.URL)
	if err == nil || !strings.Contains(err.Error(), "407") || strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("without credentials: %v, want the proxy's 407", err)
	}

	withCreds := &url.URL{Scheme: "http", User: url.UserPassword("operator", "s3cr3t"), Host: proxy.URL.Host}
	tr = proxiedTransport(t, p, withCreds, noDNS, nil)
	if code, err := get(tr, target.URL); err != nil || code != http.StatusOK {
		t.Fatalf("with credentials: %d, %v", code, err)
	}
}

// An https:// proxy is reached over TLS, its certificate verified for its
// host name.
func TestTunnelThroughAnHTTPSProxy(t *testing.T) {
	target := newCountingServer(t, "127.0.0.2", nil)
	proxy := connectproxy.StartTLS(t)
	p := New(Config{Allow: prefixes(t, "127.0.0.2/32")})

	_, err := get(proxiedTransport(t, p, proxy.URL, noDNS, nil), target.URL)
	var unknownAuthority x509.UnknownAuthorityError
	if !errors.As(err, &unknownAuthority) {
		t.Fatalf("a proxy whose certificate is not trusted: %v, want an unknown authority", err)
	}
	if len(proxy.Targets()) != 0 || len(target.requests()) != 0 {
		t.Fatal("a connection went through a proxy whose certificate is not trusted")
	}

	p.proxyRoots = x509.NewCertPool()
	p.proxyRoots.AddCert(proxy.Certificate())
	if code, err := get(proxiedTransport(t, p, proxy.URL, noDNS, nil), target.URL); err != nil || code != http.StatusOK {
		t.Fatalf("through a trusted https proxy: %d, %v", code, err)
	}
	if got := proxy.Targets(); !slices.Equal(got, []string{target.Listener.Addr().String()}) {
		t.Fatalf("the proxy was asked for %v, want %s", got, target.Listener.Addr())
	}
}

// S3 signs the Host header: through the tunnel to the checked address,
// a real S3 service still gets the host name the client signed.
func TestTunnelCarriesSignedS3RequestsToTheCheckedAddress(t *testing.T) {
	s3 := s3server.StartAt(t, "127.0.0.2", "backups")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(s3.Endpoint, "http://"))
	proxy := connectproxy.Start(t)
	tr := proxiedTransport(t, New(Config{Allow: prefixes(t, "127.0.0.2/32")}), proxy.URL, answers("127.0.0.2"), nil)
	tr.DisableKeepAlives = false
	client, err := minio.New("s3.storage.test:"+port, &minio.Options{
		Creds: credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, ""), Region: s3server.Region,
		BucketLookup: minio.BucketLookupPath, Transport: tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	body := []byte("archive through the proxy")
	if _, err := client.PutObject(ctx, "backups", "k", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put through the proxy: %v", err)
	}
	obj, err := client.GetObject(ctx, "backups", "k", minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = obj.Close() }()
	if got, err := io.ReadAll(obj); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("get through the proxy: %q, %v", got, err)
	}
	targets := proxy.Targets()
	if len(targets) == 0 || slices.ContainsFunc(targets, func(s string) bool { return s != "127.0.0.2:"+port }) {
		t.Fatalf("the proxy was asked for %v, want 127.0.0.2:%s only", targets, port)
	}
}
