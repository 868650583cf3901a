package egress

import (
	"errors"
	"net/netip"
	"testing"
)

// refusal is what Check should say about an address: the rule's name and
// range, or allowed when both are empty.
type refusal struct {
	name, prefix string
	never        bool
}

var allowed = refusal{}

func checkAll(t *testing.T, p *Policy, cases map[string]refusal) {
	t.Helper()
	for addr, want := range cases {
		err := p.Check(netip.MustParseAddr(addr))
		if want == allowed {
			if err != nil {
				t.Errorf("Check(%s) = %v, want allowed", addr, err)
			}
			continue
		}
		var refused *RefusedError
		if !errors.As(err, &refused) {
			t.Errorf("Check(%s) = %v, want refused by %s %s", addr, err, want.name, want.prefix)
			continue
		}
		got := refusal{name: refused.Rule.Name, prefix: refused.Rule.Prefix.String(), never: refused.Rule.Never}
		if got != want {
			t.Errorf("Check(%s) refused by %+v, want %+v", addr, got, want)
		}
	}
}

func TestDefaultPolicyDeniesEveryRangeButThePublicInternet(t *testing.T) {
	checkAll(t, &Policy{}, map[string]refusal{
		// IPv4, each range and its edges.
		"0.0.0.0":         {"unspecified", "0.0.0.0/8", true},
		"0.1.2.3":         {"unspecified", "0.0.0.0/8", true},
		"10.0.0.0":        {"private network", "10.0.0.0/8", false},
		"10.1.2.3":        {"private network", "10.0.0.0/8", false},
		"10.255.255.255":  {"private network", "10.0.0.0/8", false},
		"100.64.0.1":      {"CGNAT shared address space", "100.64.0.0/10", false},
		"100.100.100.200": {"CGNAT shared address space", "100.64.0.0/10", false},
		"100.127.255.255": {"CGNAT shared address space", "100.64.0.0/10", false},
		"127.0.0.1":       {"loopback", "127.0.0.0/8", false},
		"127.0.0.2":       {"loopback", "127.0.0.0/8", false},
		"127.255.255.254": {"loopback", "127.0.0.0/8", false},
		"169.254.169.254": {"link-local", "169.254.0.0/16", false},
		"172.16.0.1":      {"private network", "172.16.0.0/12", false},
		"172.31.255.255":  {"private network", "172.16.0.0/12", false},
		"192.0.0.170":     {"IETF protocol assignments", "192.0.0.0/24", false},
		"192.168.1.1":     {"private network", "192.168.0.0/16", false},
		"198.18.0.1":      {"benchmarking network", "198.18.0.0/15", false},
		"198.19.255.255":  {"benchmarking network", "198.18.0.0/15", false},
		"224.0.0.1":       {"multicast", "224.0.0.0/4", true},
		"239.255.255.250": {"multicast", "224.0.0.0/4", true},
		"240.0.0.1":       {"reserved", "240.0.0.0/4", true},
		"255.255.255.255": {"broadcast", "255.255.255.255/32", true},
		// The public internet, next to the denied ranges.
		"1.1.1.1":         allowed,
		"9.255.255.255":   allowed,
		"11.0.0.0":        allowed,
		"52.95.110.1":     allowed,
		"100.63.255.255":  allowed,
		"100.128.0.0":     allowed,
		"126.255.255.255": allowed,
		"128.0.0.0":       allowed,
		"169.253.255.255": allowed,
		"169.255.0.0":     allowed,
		"172.15.255.255":  allowed,
		"172.32.0.0":      allowed,
		"192.0.1.0":       allowed,
		"192.167.255.255": allowed,
		"192.169.0.0":     allowed,
		"198.20.0.0":      allowed,
		"223.255.255.255": allowed,
		// IPv6.
		"::":                 {"unspecified", "::/128", true},
		"::1":                {"loopback", "::1/128", false},
		"::2":                {"IPv4-compatible IPv6", "::/96", true},
		"::a00:1":            {"IPv4-compatible IPv6", "::/96", true},
		"64:ff9b::a00:1":     {"NAT64", "64:ff9b::/96", false},
		"64:ff9b::808:808":   {"NAT64", "64:ff9b::/96", false},
		"64:ff9b:1::1":       {"NAT64", "64:ff9b:1::/48", false},
		"2001::1":            {"Teredo", "2001::/32", false},
		"2002:a00:1::1":      {"6to4", "2002::/16", false},
		"fc00::1":            {"unique local", "fc00::/7", false},
		"fd00::1":            {"unique local", "fc00::/7", false},
		"fd00:ec2::254":      {"unique local", "fc00::/7", false},
		"fe80::1":            {"link-local", "fe80::/10", false},
		"fe80::1%eth0":       {"link-local", "fe80::/10", false},
		"febf::1":            {"link-local", "fe80::/10", false},
		"fec0::1":            {"site-local", "fec0::/10", false},
		"ff02::1":            {"multicast", "ff00::/8", true},
		"2600:1f18::1":       allowed,
		"2606:4700::1111":    allowed,
		"2001:4860::8888":    allowed,
		"64:ff9a::1":         allowed,
		"fbff:ffff::1":       allowed,
		"2003::1":            allowed,
		"::1:0:0:1":          allowed, // just past ::/96
		"64:ff9b:0:1::":      allowed, // between the two NAT64 ranges
		"2001:1::1":          allowed, // just past Teredo
		"::ffff:1.1.1.1":     allowed,
		"::ffff:10.0.0.1":    {"private network", "10.0.0.0/8", false},
		"::ffff:127.0.0.1":   {"loopback", "127.0.0.0/8", false},
		"::ffff:169.254.0.1": {"link-local", "169.254.0.0/16", false},
		"::ffff:100.64.0.1":  {"CGNAT shared address space", "100.64.0.0/10", false},
		"::ffff:0.0.0.0":     {"unspecified", "0.0.0.0/8", true},
	})
}

func TestAnInvalidAddressIsRefused(t *testing.T) {
	var refused *RefusedError
	if err := (&Policy{}).Check(netip.Addr{}); !errors.As(err, &refused) || !refused.Rule.Never {
		t.Fatalf("Check(invalid) = %v, want a refusal", err)
	}
}

func TestRefusalsSayWhichRuleAndHowToAllow(t *testing.T) {
	p := New(Config{ClusterNetworks: []netip.Prefix{netip.MustParsePrefix("10.96.0.0/12")}})
	cases := map[string]string{
		"10.1.2.3":        "the operator does not connect to 10.1.2.3: private network 10.0.0.0/8 (allow it with --storage-egress-allow)",
		"10.96.0.10":      "the operator does not connect to 10.96.0.10: cluster network 10.96.0.0/12 (allow it with --storage-egress-allow)",
		"::ffff:10.0.0.1": "the operator does not connect to 10.0.0.1: private network 10.0.0.0/8 (allow it with --storage-egress-allow)",
		"fe80::1%eth0":    "the operator does not connect to fe80::1: link-local fe80::/10 (allow it with --storage-egress-allow)",
		"224.0.0.1":       "the operator does not connect to 224.0.0.1: multicast 224.0.0.0/4 (never allowed)",
	}
	for addr, want := range cases {
		if err := p.Check(netip.MustParseAddr(addr)); err == nil || err.Error() != want {
			t.Errorf("Check(%s) = %v\nwant %s", addr, err, want)
		}
	}
}

func TestAllowListOpensDeniedRanges(t *testing.T) {
	p := New(Config{Allow: prefixes(t,
		"10.96.5.5/32",           // one Service in a private range
		"fd00:1::/64",            // part of the unique local range
		"::ffff:192.168.0.0/112", // written IPv4-mapped: 192.168.0.0/16
		"169.254.1.0/24",
	)})
	checkAll(t, p, map[string]refusal{
		"10.96.5.5":        allowed,
		"::ffff:10.96.5.5": allowed,
		"10.96.5.6":        {"private network", "10.0.0.0/8", false},
		"fd00:1::5":        allowed,
		"fd00:2::5":        {"unique local", "fc00::/7", false},
		"192.168.7.7":      allowed,
		"169.254.1.9":      allowed,
		"169.254.169.254":  {"link-local", "169.254.0.0/16", false},
		"127.0.0.1":        {"loopback", "127.0.0.0/8", false},
		"8.8.8.8":          allowed,
	})
}

func TestAllowingEverythingOpensNoDeniedRange(t *testing.T) {
	p := New(Config{Allow: prefixes(t, "0.0.0.0/0", "::/0")})
	checkAll(t, p, map[string]refusal{
		"8.8.8.8":         allowed,
		"127.0.0.1":       {"loopback", "127.0.0.0/8", false},
		"::1":             {"loopback", "::1/128", false},
		"10.0.0.1":        {"private network", "10.0.0.0/8", false},
		"169.254.169.254": {"link-local", "169.254.0.0/16", false},
		"fd00::1":         {"unique local", "fc00::/7", false},
	})
}

func TestNamingADeniedRangeOpensItButNotWhatIsNeverAllowed(t *testing.T) {
	var all []string
	for _, r := range builtinRules {
		all = append(all, r.Prefix.String())
	}
	p := New(Config{Allow: prefixes(t, all...)})
	checkAll(t, p, map[string]refusal{
		"127.0.0.1":       allowed,
		"::1":             allowed,
		"10.0.0.1":        allowed,
		"169.254.169.254": allowed,
		"fd00::1":         allowed,
		"64:ff9b::a00:1":  allowed,
		"0.0.0.0":         {"unspecified", "0.0.0.0/8", true},
		"::":              {"unspecified", "::/128", true},
		"::a00:1":         {"IPv4-compatible IPv6", "::/96", true},
		"224.0.0.251":     {"multicast", "224.0.0.0/4", true},
		"ff02::fb":        {"multicast", "ff00::/8", true},
		"240.1.2.3":       {"reserved", "240.0.0.0/4", true},
		"255.255.255.255": {"broadcast", "255.255.255.255/32", true},
	})
}

func TestAnIPv4AllowOpensNoIPv6Address(t *testing.T) {
	p := New(Config{Allow: prefixes(t, "127.0.0.1/32")})
	checkAll(t, p, map[string]refusal{
		"127.0.0.1":        allowed,
		"::ffff:127.0.0.1": allowed,
		"127.0.0.2":        {"loopback", "127.0.0.0/8", false},
		"::1":              {"loopback", "::1/128", false},
		"64:ff9b::7f00:1":  {"NAT64", "64:ff9b::/96", false},
	})
}

func TestClusterNetworksAreDeniedUnlessAllowed(t *testing.T) {
	p := New(Config{
		ClusterNetworks: prefixes(t,
			"10.96.0.0/12",   // Services, inside a private range
			"203.0.113.0/24", // pods on addresses the defaults allow
			"2001:db8:42::/56",
			"12.0.0.0/7",   // public addresses
			"224.0.0.0/24", // inside a range never allowed
		),
		Allow: prefixes(t, "203.0.113.7/32", "10.96.0.0/12", "224.0.0.0/24"),
	})
	checkAll(t, p, map[string]refusal{
		"10.96.0.1":      allowed, // named as wide as the cluster network
		"10.1.2.3":       {"private network", "10.0.0.0/8", false},
		"203.0.113.5":    {ClusterNetworkRule, "203.0.113.0/24", false},
		"203.0.113.7":    allowed,
		"2001:db8:42::1": {ClusterNetworkRule, "2001:db8:42::/56", false},
		"2001:db8:43::1": allowed,
		"13.1.2.3":       {ClusterNetworkRule, "12.0.0.0/7", false},
		"224.0.0.1":      {"multicast", "224.0.0.0/4", true},
		"127.0.0.1":      {"loopback", "127.0.0.0/8", false},
	})
}

// The most specific range decides: an allow-list entry for a whole private
// range leaves the cluster's networks inside it denied, and one inside a
// cluster network opens only itself.
func TestTheMostSpecificRangeDecides(t *testing.T) {
	p := New(Config{
		ClusterNetworks: prefixes(t, "10.96.0.0/12", "10.244.0.0/16", "10.0.0.0/7"),
		Allow:           prefixes(t, "10.0.0.0/8", "10.96.0.10/32", "::ffff:10.244.1.0/120"),
	})
	checkAll(t, p, map[string]refusal{
		"10.50.1.1":        allowed, // the allowed /8 is as specific as the private /8
		"10.96.0.1":        {ClusterNetworkRule, "10.96.0.0/12", false},
		"::ffff:10.96.0.1": {ClusterNetworkRule, "10.96.0.0/12", false},
		"10.96.0.10":       allowed,
		"10.244.1.9":       allowed,
		"10.244.2.9":       {ClusterNetworkRule, "10.244.0.0/16", false},
		"11.1.2.3":         {ClusterNetworkRule, "10.0.0.0/7", false},
	})
	// Between a cluster network and a built-in range of the same length,
	// the cluster network names the refusal.
	same := New(Config{ClusterNetworks: prefixes(t, "10.0.0.0/8")})
	checkAll(t, same, map[string]refusal{"10.1.2.3": {ClusterNetworkRule, "10.0.0.0/8", false}})
	// A cluster network wider than a built-in range leaves the built-in
	// one to name the addresses inside it.
	wide := New(Config{ClusterNetworks: prefixes(t, "10.0.0.0/7")})
	checkAll(t, wide, map[string]refusal{
		"10.1.2.3": {"private network", "10.0.0.0/8", false},
		"11.1.2.3": {ClusterNetworkRule, "10.0.0.0/7", false},
	})
}

func TestTheZeroPolicyIsTheDefault(t *testing.T) {
	zero, def := &Policy{}, New(Config{})
	for _, r := range builtinRules {
		a := r.Prefix.Addr().Next()
		if (zero.Check(a) == nil) != (def.Check(a) == nil) {
			t.Errorf("the zero policy and New(Config{}) differ on %s", a)
		}
		if zero.Check(a) == nil {
			t.Errorf("the zero policy allows %s, in %s %s", a, r.Name, r.Prefix)
		}
	}
}

func prefixes(t *testing.T, s ...string) []netip.Prefix {
	t.Helper()
	var p Prefixes
	for _, v := range s {
		if err := p.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	return p
}
