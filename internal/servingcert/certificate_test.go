package servingcert

import (
	"crypto/tls"
	"crypto/x509"
	"maps"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

var (
	start     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	lifetimes = Lifetimes{CA: 30 * 24 * time.Hour, Serving: 9 * 24 * time.Hour}
	names     = ServiceDNSNames("echo-operator-system", "echo-operator-live-api")
)

// issued returns a Secret's data with a CA and a serving certificate
// issued at start.
func issued(t *testing.T) map[string][]byte {
	t.Helper()
	data := map[string][]byte{}
	if _, err := ensureCA(data, start, lifetimes.CA); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureServing(data, names, start, lifetimes.Serving); err != nil {
		t.Fatal(err)
	}
	return data
}

// verifies reports whether data's serving certificate verifies at now
// for the Service's name against its own CA bundle.
func verifies(data map[string][]byte, now time.Time) bool {
	return verifiesFor(data, data[CABundle], names[0], now)
}

// verifiesFor reports whether data's serving certificate verifies for
// dnsName against bundle at now, as kube-apiserver checks the live API.
func verifiesFor(data map[string][]byte, bundle []byte, dnsName string, now time.Time) bool {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(bundle) {
		return false
	}
	certs := parseCerts(data[CertKey])
	if len(certs) == 0 {
		return false
	}
	_, err := certs[0].Verify(x509.VerifyOptions{DNSName: dnsName, Roots: pool, CurrentTime: now})
	return err == nil
}

func TestEnsure(t *testing.T) {
	tests := []struct {
		name string
		// data returns the Secret's data before the check.
		data func(t *testing.T) map[string][]byte
		now  time.Time
		// What the check is expected to renew.
		newCA, newServing bool
		// Certificates expected in the CA bundle after the check.
		bundle int
	}{
		{
			name: "an empty Secret gets a CA and a certificate",
			data: func(*testing.T) map[string][]byte { return map[string][]byte{} },
			now:  start, newCA: true, newServing: true, bundle: 1,
		},
		{
			name: "nothing changes before two thirds of the lifetimes",
			data: issued,
			now:  start.Add(5 * 24 * time.Hour), bundle: 1,
		},
		{
			name: "the serving certificate is renewed after two thirds of its lifetime",
			data: issued,
			now:  start.Add(6*24*time.Hour + time.Minute), newServing: true, bundle: 1,
		},
		{
			name: "a CA due for renewal is replaced and kept in the bundle while valid",
			data: issued,
			now:  start.Add(21 * 24 * time.Hour), newCA: true, newServing: true, bundle: 2,
		},
		{
			name: "an expired CA is replaced and not kept",
			data: issued,
			now:  start.Add(31 * 24 * time.Hour), newCA: true, newServing: true, bundle: 1,
		},
		{
			name: "a CA key that is not the CA's replaces the CA, which stays trusted while valid",
			data: func(t *testing.T) map[string][]byte {
				data, other := issued(t), issued(t)
				data[CAKeyKey] = other[CAKeyKey]
				return data
			},
			now: start, newCA: true, newServing: true, bundle: 2,
		},
		{
			name: "a serving certificate for another Service is replaced",
			data: func(t *testing.T) map[string][]byte {
				data := issued(t)
				ca, key, err := currentCA(data)
				if err != nil {
					t.Fatal(err)
				}
				data[CertKey], data[KeyKey], err = newServing(ca, key, []string{"other.echo-operator-system.svc"}, start, lifetimes.Serving)
				if err != nil {
					t.Fatal(err)
				}
				return data
			},
			now: start, newServing: true, bundle: 1,
		},
		{
			name: "a serving key that is not the certificate's is replaced",
			data: func(t *testing.T) map[string][]byte {
				data, other := issued(t), issued(t)
				data[KeyKey] = other[KeyKey]
				return data
			},
			now: start, newServing: true, bundle: 1,
		},
		{
			name: "garbage is replaced",
			data: func(*testing.T) map[string][]byte {
				return map[string][]byte{CABundle: []byte("x"), CAKeyKey: []byte("y"), CertKey: []byte("z"), KeyKey: []byte("w")}
			},
			now: start, newCA: true, newServing: true, bundle: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			data := tt.data(t)
			before := maps.Clone(data)

			caChanged, err := ensureCA(data, tt.now, lifetimes.CA)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(caChanged).To(Equal(tt.newCA))
			issuedNow, err := ensureServing(data, names, tt.now, lifetimes.Serving)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(issuedNow).To(Equal(tt.newServing))

			g.Expect(parseCerts(data[CABundle])).To(HaveLen(tt.bundle))
			g.Expect(verifies(data, tt.now)).To(BeTrue(), "the certificate verifies against the bundle")
			_, err = tls.X509KeyPair(data[CertKey], data[KeyKey])
			g.Expect(err).NotTo(HaveOccurred())
			if !tt.newCA && !tt.newServing {
				g.Expect(data).To(Equal(before), "a current Secret is left as it is")
			}
			if tt.newCA && tt.bundle == 2 {
				g.Expect(parseCerts(data[CABundle])[1].Raw).To(Equal(parseCerts(before[CABundle])[0].Raw),
					"the previous CA follows the new one")
			}
			g.Expect(nextRenewal(data)).To(BeTemporally(">", tt.now))
		})
	}
}

// Between a CA's rotation and the next serving certificate, the bundle
// trusts both the certificate still served and the next one.
func TestCARotationKeepsServedCertificateTrusted(t *testing.T) {
	g := NewWithT(t)
	data := issued(t)
	// Renewed on day 15, the certificate is valid until day 24; the CA
	// is due on day 20.
	g.Expect(ensureServing(data, names, start.Add(15*24*time.Hour), lifetimes.Serving)).To(BeTrue())
	now := start.Add(21 * 24 * time.Hour)
	served := maps.Clone(data)

	g.Expect(ensureCA(data, now, lifetimes.CA)).To(BeTrue())
	served[CABundle] = data[CABundle]
	g.Expect(verifies(served, now)).To(BeTrue(), "the old certificate verifies against the new bundle")
	g.Expect(ensureServing(data, names, now, lifetimes.Serving)).To(BeTrue(), "the old CA's certificate is replaced")
	g.Expect(verifies(data, now)).To(BeTrue())
}

func TestExpiredCAsLeaveTheBundle(t *testing.T) {
	g := NewWithT(t)
	data := issued(t)
	g.Expect(ensureCA(data, start.Add(21*24*time.Hour), lifetimes.CA)).To(BeTrue())
	g.Expect(parseCerts(data[CABundle])).To(HaveLen(2))

	// The old CA expires at day 30; the new one is due at day 41.
	g.Expect(ensureCA(data, start.Add(31*24*time.Hour), lifetimes.CA)).To(BeTrue())
	g.Expect(parseCerts(data[CABundle])).To(HaveLen(1))
	g.Expect(ensureCA(data, start.Add(32*24*time.Hour), lifetimes.CA)).To(BeFalse())
}

func TestServingHeldUntilTheNewCAIsTrusted(t *testing.T) {
	rotatedAt := start.Add(21 * 24 * time.Hour)
	trusted := rotatedAt.Add(caTrustDelay)
	// rotated returns data just after a CA rotation at rotatedAt: the new
	// CA and the old in the bundle, the old CA's certificate served.
	rotated := func(t *testing.T) map[string][]byte {
		data := issued(t)
		if _, err := ensureServing(data, names, start.Add(15*24*time.Hour), lifetimes.Serving); err != nil {
			t.Fatal(err)
		}
		if changed, err := ensureCA(data, rotatedAt, lifetimes.CA); err != nil || !changed {
			t.Fatalf("no CA rotation: %v", err)
		}
		return data
	}
	tests := []struct {
		name string
		data func(t *testing.T) map[string][]byte
		now  time.Time
		want time.Time
	}{
		{name: "the old CA's certificate is served until the new CA is trusted", data: rotated, now: rotatedAt, want: trusted},
		{name: "then the new CA signs", data: rotated, now: trusted},
		{
			name: "a certificate of the new CA is not held",
			data: func(t *testing.T) map[string][]byte {
				data := rotated(t)
				if _, err := ensureServing(data, names, trusted, lifetimes.Serving); err != nil {
					t.Fatal(err)
				}
				return data
			},
			now: rotatedAt,
		},
		{
			name: "nothing served yet: nothing to wait for",
			data: func(t *testing.T) map[string][]byte {
				data := map[string][]byte{}
				if _, err := ensureCA(data, start, lifetimes.CA); err != nil {
					t.Fatal(err)
				}
				return data
			},
			now: start,
		},
		{
			name: "a served pair that is not one is replaced at once",
			data: func(t *testing.T) map[string][]byte {
				data := rotated(t)
				data[KeyKey] = []byte("not a key")
				return data
			},
			now: rotatedAt,
		},
		{name: "no CA", data: func(*testing.T) map[string][]byte { return map[string][]byte{} }, now: start},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(servingHeldUntil(tt.data(t), names, tt.now)).To(Equal(tt.want))
		})
	}
}

func TestRenewalTimeOfACenturiesLongCA(t *testing.T) {
	g := NewWithT(t)
	cert := &x509.Certificate{NotBefore: start, NotAfter: start.AddDate(200, 0, 0)}
	g.Expect(renewalTime(cert)).To(BeTemporally(">", start.AddDate(100, 0, 0)))
}
