package egress

import (
	"context"
	"net"
	"net/http"
	"net/netip"
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

// ConfigureTransport makes tr connect only where the policy allows, and
// drops the environment's proxy settings. Without a proxy, every
// connection goes through Dialer. With one, every connection goes through
// the proxy to an address the policy checked (tunnelDialer): the host is
// resolved once per connection, by the operator, and the proxy is asked to
// CONNECT to the checked address, never to the name, so it resolves
// nothing. TLS still verifies the storage's certificate for the host name,
// and a plain HTTP request keeps its Host header: only the tunnel goes to
// the address.
func (p *Policy) ConfigureTransport(tr *http.Transport) {
	tr.Proxy = nil
	if p.proxy == nil {
		tr.DialContext = p.Dialer().DialContext
		return
	}
	tr.DialContext = p.tunnelDialer().DialContext
}

// checkedAddrs resolves host once (host itself when it is an address
// literal) and returns its addresses when every one is allowed, else the
// refusal of the first that is not: the addresses a connection through
// the proxy may then be made to.
func (p *Policy) checkedAddrs(ctx context.Context, host string) ([]netip.Addr, error) {
	addrs, err := p.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	for i, addr := range addrs {
		if err := p.Check(addr); err != nil {
			return nil, err
		}
		addrs[i] = addr.Unmap().WithZone("")
	}
	return addrs, nil
}

// lookup is host's addresses: host itself when it is an address literal,
// else one answer of the policy's resolver.
func (p *Policy) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if addr, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{addr}, nil
	}
	var resolver resolver = net.DefaultResolver
	if p.resolver != nil {
		resolver = p.resolver
	}
	addrs, err := resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no address", Name: host, IsNotFound: true}
	}
	return addrs, nil
}
