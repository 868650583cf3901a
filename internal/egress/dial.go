package egress

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

const (
	// dialTimeout bounds one connection attempt.
	dialTimeout = 10 * time.Second
	keepAlive   = 30 * time.Second
)

// Dialer returns a dialer that checks, as each connection is made, the
// address it is made to: a host name is dialled address by address, and
// each refused one fails with a *RefusedError before any packet is sent
// (the socket is not connected yet).
func (p *Policy) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive, Control: p.control}
}

// control is the dialer's hook, called with the resolved address of
// every connection before it connects.
func (p *Policy) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Addr: netip.Addr{}, Rule: invalidAddress}
	}
	if err := p.Check(ap.Addr()); err != nil {
		return err
	}
	return p.connecting(address)
}

func (p *Policy) connecting(address string) error {
	if p.beforeConnect == nil {
		return nil
	}
	return p.beforeConnect(address)
}

// ConfigureTransport makes tr connect only where the policy allows.
// Without a proxy, every connection goes through Dialer and the
// environment's proxy settings are dropped. With one, tr connects only to
// the proxy, and each request is refused before it is sent unless every
// address its host resolves to is allowed (CheckHost): the proxy resolves
// the host again and is trusted with what it then connects to.
func (p *Policy) ConfigureTransport(tr *http.Transport) {
	if p.proxy == nil {
		tr.Proxy = nil
		tr.DialContext = p.Dialer().DialContext
		return
	}
	proxy := *p.proxy
	tr.Proxy = func(req *http.Request) (*url.URL, error) {
		if err := p.CheckHost(req.Context(), req.URL.Hostname()); err != nil {
			return nil, err
		}
		return &proxy, nil
	}
	// The administrator's proxy, wherever it is.
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive, Control: func(_, address string, _ syscall.RawConn) error {
		return p.connecting(address)
	}}).DialContext
}

// CheckHost checks every address host resolves to (host itself when it
// is an address literal): nil when all are allowed, else the refusal of
// the first one that is not.
func (p *Policy) CheckHost(ctx context.Context, host string) error {
	if addr, err := netip.ParseAddr(host); err == nil {
		return p.Check(addr)
	}
	resolver := p.resolver
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
	}
	for _, addr := range addrs {
		if err := p.Check(addr); err != nil {
			return err
		}
	}
	return nil
}
