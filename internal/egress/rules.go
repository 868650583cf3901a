package egress

import "net/netip"

// Rule is a range of addresses the policy denies, and its name in errors.
type Rule struct {
	// Name says what the range is: "private network", "loopback".
	Name   string
	Prefix netip.Prefix
	// Never marks a range no allow-list entry opens: nothing there is a
	// storage service.
	Never bool
}

// ClusterNetworkRule is the name of the ranges given by ClusterNetworksFlag.
const ClusterNetworkRule = "cluster network"

// builtinRules are denied unless allowed (IANA's special-purpose address
// registries, RFC 6890 and its updates): every range that is not the
// public internet, and those that reach it through a translator the
// cluster may run.
var builtinRules = []Rule{
	// IPv4.
	never("unspecified", "0.0.0.0/8"), // 0.0.0.0 is this host on Linux
	rule("private network", "10.0.0.0/8"),
	rule("CGNAT shared address space", "100.64.0.0/10"), // Alibaba Cloud's metadata: 100.100.100.200
	rule("loopback", "127.0.0.0/8"),
	rule("link-local", "169.254.0.0/16"), // cloud instance metadata: 169.254.169.254
	rule("private network", "172.16.0.0/12"),
	rule("IETF protocol assignments", "192.0.0.0/24"),
	rule("private network", "192.168.0.0/16"),
	rule("benchmarking network", "198.18.0.0/15"),
	never("multicast", "224.0.0.0/4"),
	never("reserved", "240.0.0.0/4"),
	never("broadcast", "255.255.255.255/32"),
	// IPv6.
	never("unspecified", "::/128"),
	rule("loopback", "::1/128"),
	never("IPv4-compatible IPv6", "::/96"), // deprecated; ::1 and :: are more specific
	rule("NAT64", "64:ff9b::/96"),
	rule("NAT64", "64:ff9b:1::/48"),
	rule("Teredo", "2001::/32"),
	rule("6to4", "2002::/16"),
	rule("unique local", "fc00::/7"), // AWS's IPv6 instance metadata: fd00:ec2::254
	rule("link-local", "fe80::/10"),
	rule("site-local", "fec0::/10"),
	never("multicast", "ff00::/8"),
}

func rule(name, prefix string) Rule {
	return Rule{Name: name, Prefix: netip.MustParsePrefix(prefix)}
}

func never(name, prefix string) Rule {
	return Rule{Name: name, Prefix: netip.MustParsePrefix(prefix), Never: true}
}

// Rules returns the ranges every policy denies, besides the cluster's
// networks.
func Rules() []Rule {
	return append([]Rule(nil), builtinRules...)
}
