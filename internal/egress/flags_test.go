package egress

import (
	"strings"
	"testing"
)

func TestPrefixesParseCIDRsAndAddresses(t *testing.T) {
	var p Prefixes
	for _, v := range []string{"10.96.0.0/12, 10.244.0.0/16", "", "127.0.0.1", "fd00::/8,,::1", "::ffff:10.0.0.0/104"} {
		if err := p.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	want := "10.96.0.0/12,10.244.0.0/16,127.0.0.1/32,fd00::/8,::1/128,::ffff:10.0.0.0/104"
	if got := p.String(); got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	if (*Prefixes)(nil).String() != "" {
		t.Error("a nil list prints as something")
	}
}

func TestPrefixesRefuseWhatIsNoRange(t *testing.T) {
	cases := map[string]string{
		"10.96.0.0/33":   "is not a CIDR",
		"10.96.0.0/":     "is not a CIDR",
		"10.1.2.3/8":     "did you mean 10.0.0.0/8?",
		"fd00::1/8":      "did you mean fd00::/8?",
		"minio.internal": "is not a CIDR",
		"fe80::1%eth0":   "is not a CIDR",
		"10.0.0.0/8,x":   "\"x\" is not a CIDR",
	}
	for in, want := range cases {
		var p Prefixes
		if err := p.Set(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Set(%q) = %v, want an error saying %q", in, err, want)
		}
	}
}

func TestParseProxy(t *testing.T) {
	for _, ok := range []string{"http://proxy.infra:3128", "https://10.0.0.5:8443/", "http://user:secret@proxy:3128"} {
		if u, err := ParseProxy(ok); err != nil || u == nil {
			t.Errorf("ParseProxy(%q) = %v, %v", ok, u, err)
		}
	}
	if u, err := ParseProxy(""); u != nil || err != nil {
		t.Errorf("ParseProxy(\"\") = %v, %v, want no proxy", u, err)
	}
	for _, bad := range []string{"proxy:3128", "socks5://proxy:1080", "http://", "http://proxy:3128/path", "http://user:secret@proxy:3128?x=1", "://"} {
		_, err := ParseProxy(bad)
		if err == nil {
			t.Errorf("ParseProxy(%q) accepted it", bad)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseProxy(%q) = %v, which quotes the credentials", bad, err)
		}
	}
}
