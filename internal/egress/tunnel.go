package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// maxConnectAnswerBytes bounds the proxy's answer to a CONNECT.
const maxConnectAnswerBytes = 64 << 10

// tunnelDialer connects through the administrator's proxy to addresses
// the policy checked. Each connection resolves its host once, here, and
// the proxy is asked to CONNECT to a checked address: were it given the
// name, it would resolve it again, and a name that answers an allowed
// address to the check and a denied one to the proxy (DNS rebinding)
// would reach the denied one. Plain HTTP goes through the tunnel too: a
// proxy forwarding a request addressed to the checked address would send
// that address as the Host header (RFC 9112, 3.2.2), which S3 signs.
type tunnelDialer struct {
	policy *Policy
	proxy  *url.URL
	// dialer connects to the proxy, wherever the administrator put it.
	dialer *net.Dialer
}

func (p *Policy) tunnelDialer() *tunnelDialer {
	return &tunnelDialer{policy: p, proxy: p.proxy, dialer: &net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive,
		Control: func(_, address string, _ syscall.RawConn) error { return p.connecting(address) }}}
}

// DialContext returns a tunnel to address through the proxy: its host's
// addresses, all checked, are tried in turn, as a dialer tries them.
func (d *tunnelDialer) DialContext(ctx context.Context, _, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	addrs, err := d.policy.checkedAddrs(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, addr := range addrs {
		conn, err := d.tunnel(ctx, net.JoinHostPort(addr.String(), port))
		if err == nil {
			return conn, nil
		}
		if errs = append(errs, err); ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// tunnel connects to the proxy and has it CONNECT to target, an address
// and port.
func (d *tunnelDialer) tunnel(ctx context.Context, target string) (net.Conn, error) {
	conn, err := d.dialProxy(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.connect(ctx, conn, target); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// dialProxy connects to the proxy, over TLS for an https:// one, whose
// certificate is verified for its host name.
func (d *tunnelDialer) dialProxy(ctx context.Context) (net.Conn, error) {
	conn, err := d.dialer.DialContext(ctx, "tcp", d.proxyAddress())
	if err != nil || d.proxy.Scheme != "https" {
		return conn, err
	}
	tlsConn := tls.Client(conn, &tls.Config{ServerName: d.proxy.Hostname(), RootCAs: d.policy.proxyRoots, MinVersion: tls.VersionTLS12})
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("the storage proxy %s: %w", d.proxy.Host, err)
	}
	return tlsConn, nil
}

// proxyAddress is the proxy's host and port, the scheme's when it names
// none.
func (d *tunnelDialer) proxyAddress() string {
	if d.proxy.Port() != "" {
		return d.proxy.Host
	}
	if d.proxy.Scheme == "https" {
		return net.JoinHostPort(d.proxy.Hostname(), "443")
	}
	return net.JoinHostPort(d.proxy.Hostname(), "80")
}

// connect asks the proxy on conn to CONNECT to target, within the dial's
// time, with the proxy URL's credentials if it has any.
func (d *tunnelDialer) connect(ctx context.Context, conn net.Conn, target string) error {
	deadline := time.Now().Add(dialTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if u := d.proxy.User; u != nil {
		password, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+password)))
	}
	if err := req.Write(conn); err != nil {
		return d.failed(ctx, target, err)
	}
	if err := readConnected(conn, req); err != nil {
		return d.failed(ctx, target, err)
	}
	return conn.SetDeadline(time.Time{})
}

// readConnected reads the proxy's answer to req: nil when the tunnel is
// open. The client speaks first in HTTP and TLS alike, so a proxy that
// sends more than its answer is refused rather than its bytes dropped.
func readConnected(conn net.Conn, req *http.Request) error {
	br := bufio.NewReader(&io.LimitedReader{R: conn, N: maxConnectAnswerBytes})
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return err
	}
	// The answer's body, if any, is the tunnel's: it is not read.
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("answered %s", resp.Status)
	}
	if br.Buffered() > 0 {
		return errors.New("sent data before the tunnel was used")
	}
	return nil
}

// failed is the error of a CONNECT to target that did not open, the
// context's when it ended first. It names the proxy by its host only,
// never its credentials.
func (d *tunnelDialer) failed(ctx context.Context, target string, err error) error {
	if ctx.Err() != nil {
		err = context.Cause(ctx)
	}
	return fmt.Errorf("the storage proxy %s did not connect to %s: %w", d.proxy.Host, target, err)
}
