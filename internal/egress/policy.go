package egress

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/netip"
	"net/url"
)

// Config is what an administrator sets, by the manager's flags.
type Config struct {
	// Allow opens these ranges where they are at least as specific as
	// the denied range that holds them (AllowFlag).
	Allow []netip.Prefix
	// ClusterNetworks are the cluster's Service and pod ranges, denied
	// unless allowed (ClusterNetworksFlag).
	ClusterNetworks []netip.Prefix
	// Proxy, when set, is the HTTP proxy every request goes through
	// (ProxyFlag); nil: no proxy, whatever the environment says.
	Proxy *url.URL
}

// Policy decides which addresses may be connected to. The zero Policy
// denies the built-in ranges (Rules), allows nothing more and uses no
// proxy.
type Policy struct {
	allow []netip.Prefix
	// deny holds the cluster's networks, then the built-in rules.
	deny  []Rule
	proxy *url.URL
	// resolver looks up host names for the connections through the
	// proxy; nil: the default resolver.
	resolver resolver
	// proxyRoots, when set, replaces the system's roots in verifying an
	// https:// proxy's certificate: for the tests.
	proxyRoots *x509.CertPool
	// beforeConnect, when set, is called with every address a connection
	// is about to be made to, once the policy has allowed it: the tests
	// refuse there whatever is off loopback, so that a broken policy
	// sends nothing anywhere.
	beforeConnect func(address string) error
}

// resolver is what the policy asks for a host's addresses: a
// *net.Resolver.
type resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// New returns the policy of c.
func New(c Config) *Policy {
	p := &Policy{proxy: c.Proxy}
	for _, prefix := range c.Allow {
		p.allow = append(p.allow, normalize(prefix))
	}
	for _, prefix := range c.ClusterNetworks {
		p.deny = append(p.deny, Rule{Name: ClusterNetworkRule, Prefix: normalize(prefix)})
	}
	return p
}

// normalize masks prefix and writes an IPv4-mapped one as IPv4, the form
// Check compares addresses in.
func normalize(prefix netip.Prefix) netip.Prefix {
	if a := prefix.Addr(); a.Is4In6() && prefix.Bits() >= 96 {
		prefix = netip.PrefixFrom(a.Unmap(), prefix.Bits()-96)
	}
	return prefix.Masked()
}

// RefusedError is a connection the policy refused: which address, and
// which rule refused it.
type RefusedError struct {
	Addr netip.Addr
	Rule Rule
}

func (e *RefusedError) Error() string {
	if e.Rule.Never {
		return fmt.Sprintf("the operator does not connect to %s: %s %s (never allowed)", e.Addr, e.Rule.Name, e.Rule.Prefix)
	}
	return fmt.Sprintf("the operator does not connect to %s: %s %s (allow it with --%s)", e.Addr, e.Rule.Name, e.Rule.Prefix, AllowFlag)
}

// Check returns nil when addr may be connected to, else a *RefusedError
// naming the rule that denies it. The most specific range holding addr
// decides: a denied range (built in or a cluster network) refuses it
// unless an allow-list entry at least as specific holds it too, so
// allowing 10.0.0.0/8 leaves a cluster network 10.96.0.0/12 denied, and
// allowing 0.0.0.0/0 opens no denied range. Ranges never allowed stay
// refused. An IPv4-mapped IPv6 address is checked as the IPv4 address it
// carries.
func (p *Policy) Check(addr netip.Addr) error {
	addr = addr.Unmap().WithZone("")
	r, denied := p.match(addr)
	if !denied {
		return nil
	}
	if bits, ok := p.allowedBits(addr); ok && !r.Never && bits >= r.Prefix.Bits() {
		return nil
	}
	return &RefusedError{Addr: addr, Rule: r}
}

// match finds the most specific denied range holding addr. A built-in
// range that is never allowed stays so whatever cluster network holds it;
// otherwise, between ranges of the same length, the cluster network names
// it. An invalid address is refused as unspecified.
func (p *Policy) match(addr netip.Addr) (Rule, bool) {
	if !addr.IsValid() {
		return invalidAddress, true
	}
	builtin, isBuiltin := mostSpecific(builtinRules, addr)
	if isBuiltin && builtin.Never {
		return builtin, true
	}
	cluster, isCluster := mostSpecific(p.deny, addr)
	if isCluster && (!isBuiltin || cluster.Prefix.Bits() >= builtin.Prefix.Bits()) {
		return cluster, true
	}
	return builtin, isBuiltin
}

var invalidAddress = never("unspecified", "0.0.0.0/32")

// mostSpecific is the longest of rules' ranges that holds addr; the first
// of equal ones.
func mostSpecific(rules []Rule, addr netip.Addr) (Rule, bool) {
	var best Rule
	found := false
	for _, r := range rules {
		if r.Prefix.Contains(addr) && (!found || r.Prefix.Bits() > best.Prefix.Bits()) {
			best, found = r, true
		}
	}
	return best, found
}

// allowedBits is the length of the most specific allow-list entry holding
// addr.
func (p *Policy) allowedBits(addr netip.Addr) (int, bool) {
	bits, found := 0, false
	for _, prefix := range p.allow {
		if prefix.Contains(addr) && (!found || prefix.Bits() > bits) {
			bits, found = prefix.Bits(), true
		}
	}
	return bits, found
}
