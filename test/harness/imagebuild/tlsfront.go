package imagebuild

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

// TLSFront serves a Registry over HTTPS at an address of a network the
// test made itself (the real node's bridge), with a certificate of a CA of
// its own: for clients that pull over HTTPS only, such as operator-sdk,
// and for pods, which cannot reach the registry's loopback address.
type TLSFront struct {
	// Host is its address, host:port, the host part of the image
	// references it serves; CAFile is the PEM file of the CA that signed
	// its certificate, for clients to trust.
	Host, CAFile string
	cert         tls.Certificate
	target       string
	srv          *http.Server
}

// NewTLSFront issues the front's certificate for the IP address of host
// (ip:port) and writes its CA into dir/ca.pem. It serves nothing until
// Serve, so that the CA can be handed to clients before the address
// exists.
func (r *Registry) NewTLSFront(host, dir string) (*TLSFront, error) {
	ipText, _, err := net.SplitHostPort(host)
	if err != nil {
		return nil, err
	}
	ip := net.ParseIP(ipText)
	if ip == nil || ip.IsUnspecified() {
		return nil, fmt.Errorf("the registry's TLS front needs one IP address, not %q", ipText)
	}
	ca, err := testcerts.NewCA("echo-operator test registry CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := ca.Sign(testcerts.Leaf{CommonName: ipText, IPAddresses: []net.IP{ip}})
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f := &TLSFront{Host: host, CAFile: filepath.Join(dir, "ca.pem"), cert: cert, target: r.Host}
	return f, os.WriteFile(f.CAFile, ca.CertPEM(), 0o644)
}

// Serve listens on the front's address and passes every request on to the
// registry.
func (f *TLSFront) Serve() error {
	l, err := net.Listen("tcp", f.Host)
	if err != nil {
		return fmt.Errorf("the registry's TLS front: %w", err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: f.target})
	// The registry's own address, not a proxy's from the environment.
	proxy.Transport = &http.Transport{Proxy: nil}
	f.srv = &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{f.cert}, MinVersion: tls.VersionTLS12}}
	go func() { _ = f.srv.Serve(tls.NewListener(l, f.srv.TLSConfig)) }()
	return nil
}

// Stop stops serving.
func (f *TLSFront) Stop() error {
	if f == nil || f.srv == nil {
		return nil
	}
	err := f.srv.Close()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
