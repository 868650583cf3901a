package egress

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// The manager's flags that set the policy: only an administrator, who
// writes the operator's Deployment, sets them. Errors tell how to allow
// an address by AllowFlag's name.
const (
	AllowFlag           = "storage-egress-allow"
	ClusterNetworksFlag = "cluster-networks"
	ProxyFlag           = "storage-proxy"
)

// The environment variables that set the same, for installs whose
// Deployment's arguments an administrator does not write (with OLM, the
// Subscription's spec.config.env sets them): the flags' ranges add to
// theirs, and ProxyFlag replaces ProxyEnv.
const (
	AllowEnv           = "STORAGE_EGRESS_ALLOW"
	ClusterNetworksEnv = "CLUSTER_NETWORKS"
	ProxyEnv           = "STORAGE_PROXY"
)

// Prefixes is a flag.Value of CIDRs, comma-separated; the flag may also
// be repeated. A bare address is a range of one address.
type Prefixes []netip.Prefix

func (p *Prefixes) String() string {
	if p == nil {
		return ""
	}
	s := make([]string, len(*p))
	for i, prefix := range *p {
		s[i] = prefix.String()
	}
	return strings.Join(s, ",")
}

// Set parses value and appends its ranges. A range with host bits set
// (10.1.2.3/8) is refused rather than guessed at.
func (p *Prefixes) Set(value string) error {
	for _, field := range strings.Split(value, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		prefix, err := parsePrefix(field)
		if err != nil {
			return err
		}
		*p = append(*p, prefix)
	}
	return nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		addr, err := netip.ParseAddr(s)
		if err != nil || addr.Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("%q is not a CIDR (10.96.0.0/12, fd00::/8) or an address", s)
		}
		return netip.PrefixFrom(addr, addr.BitLen()), nil
	}
	prefix, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a CIDR (10.96.0.0/12, fd00::/8) or an address", s)
	}
	if prefix.Masked() != prefix {
		return netip.Prefix{}, fmt.Errorf("%q has bits set past its length: did you mean %s?", s, prefix.Masked())
	}
	return prefix, nil
}

// ParseProxy parses the value of ProxyFlag: an http:// or https:// URL
// of a host and port, or empty for no proxy.
func ParseProxy(value string) (*url.URL, error) {
	if value == "" {
		return nil, nil
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--%s must be an http:// or https:// URL of a host and port", ProxyFlag)
	}
	return u, nil
}
