package servingcert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The keys of the Secret. tls.crt and tls.key are the serving pair, as in
// any kubernetes.io/tls Secret. ca.crt is the bundle kube-apiserver trusts:
// the current CA first, then, after a CA rotation and until it expires,
// the one before it, so that replicas still serving a certificate of the
// old CA stay trusted. ca.key is the current CA's key.
const (
	CertKey   = corev1.TLSCertKey
	KeyKey    = corev1.TLSPrivateKeyKey
	CABundle  = "ca.crt"
	CAKeyKey  = "ca.key"
	caSubject = "echo-operator live API CA"
)

// backdate is how long before its issue a certificate is valid from, for
// clocks a little behind.
const backdate = time.Minute

// caTrustDelay is how long a new CA is in the caBundle before it signs
// what is served, while the certificate served until then is still valid.
// kube-apiserver's aggregator sees an APIService change within a second
// or two; this leaves room for a busy one.
const caTrustDelay = 30 * time.Second

// Lifetimes of what is issued. Either is renewed once two thirds of its
// lifetime have passed.
type Lifetimes struct {
	CA      time.Duration
	Serving time.Duration
}

// DefaultLifetimes are five years for the CA, one for the serving
// certificate.
var DefaultLifetimes = Lifetimes{CA: 5 * 365 * 24 * time.Hour, Serving: 365 * 24 * time.Hour}

// ensureCA makes data hold a current CA: one that parses, matches its
// key and is not due for renewal at now. It reports whether it changed
// data: a new CA (the previous one kept in the bundle while it is valid),
// or expired CAs dropped from the bundle.
func ensureCA(data map[string][]byte, now time.Time, lifetime time.Duration) (bool, error) {
	bundle := parseCerts(data[CABundle])
	current, _, err := currentCA(data)
	if err == nil && !renewalDue(current, now) {
		kept := validAt(bundle, now)
		if len(kept) == len(bundle) {
			return false, nil
		}
		data[CABundle] = encodeCerts(kept)
		return true, nil
	}
	certPEM, keyPEM, err := newCA(now, lifetime)
	if err != nil {
		return false, err
	}
	newCert := parseCerts(certPEM)
	// The CA before it, if any, stays trusted while it is valid: replicas
	// still serve what it signed. That holds when only its key was lost.
	var previous []*x509.Certificate
	if len(bundle) > 0 && bundle[0].IsCA && now.Before(bundle[0].NotAfter) {
		previous = bundle[:1]
	}
	data[CABundle] = encodeCerts(append(newCert, previous...))
	data[CAKeyKey] = keyPEM
	return true, nil
}

// ensureServing makes data hold a serving certificate of the current CA
// for dnsNames that is not due for renewal at now. It reports whether it
// issued one.
func ensureServing(data map[string][]byte, dnsNames []string, now time.Time, lifetime time.Duration) (bool, error) {
	ca, caKey, err := currentCA(data)
	if err != nil {
		return false, err
	}
	if servingValid(data, ca, dnsNames, now) {
		return false, nil
	}
	certPEM, keyPEM, err := newServing(ca, caKey, dnsNames, now, lifetime)
	if err != nil {
		return false, err
	}
	data[CertKey], data[KeyKey] = certPEM, keyPEM
	return true, nil
}

// nextRenewal is when the first of data's CA and serving certificate is
// due for renewal; the zero time when either is missing.
func nextRenewal(data map[string][]byte) time.Time {
	ca, _, err := currentCA(data)
	if err != nil {
		return time.Time{}
	}
	serving := parseCerts(data[CertKey])
	if len(serving) == 0 {
		return time.Time{}
	}
	a, b := renewalTime(ca), renewalTime(serving[0])
	if a.Before(b) {
		return a
	}
	return b
}

// servingHeldUntil is when a serving certificate of data's current CA may
// be issued, or the zero time when it may be now. A CA younger than
// caTrustDelay may not be trusted by kube-apiserver yet (the caBundle
// reaches it through its own watch of the APIService), so while the pair
// served now still verifies against the bundle it goes on being served
// until then.
func servingHeldUntil(data map[string][]byte, dnsNames []string, now time.Time) time.Time {
	ca, _, err := currentCA(data)
	if err != nil {
		return time.Time{}
	}
	trusted := ca.NotBefore.Add(backdate + caTrustDelay)
	if !now.Before(trusted) || servingValid(data, ca, dnsNames, now) ||
		!servingVerifies(data, parseCerts(data[CABundle]), dnsNames, now) {
		return time.Time{}
	}
	return trusted
}

// servingValid reports whether data's serving pair is one, signed by ca,
// names every one of dnsNames and is not due for renewal at now.
func servingValid(data map[string][]byte, ca *x509.Certificate, dnsNames []string, now time.Time) bool {
	certs := parseCerts(data[CertKey])
	if len(certs) == 0 || renewalDue(certs[0], now) {
		return false
	}
	return servingVerifies(data, []*x509.Certificate{ca}, dnsNames, now)
}

// servingVerifies reports whether data's serving pair is one and verifies
// at now, against roots, for every one of dnsNames.
func servingVerifies(data map[string][]byte, roots []*x509.Certificate, dnsNames []string, now time.Time) bool {
	if _, err := tls.X509KeyPair(data[CertKey], data[KeyKey]); err != nil {
		return false
	}
	certs := parseCerts(data[CertKey])
	if len(certs) == 0 {
		return false
	}
	pool := x509.NewCertPool()
	for _, root := range roots {
		pool.AddCert(root)
	}
	for _, name := range dnsNames {
		if _, err := certs[0].Verify(x509.VerifyOptions{DNSName: name, Roots: pool, CurrentTime: now}); err != nil {
			return false
		}
	}
	return true
}

// currentCA is the first certificate of the bundle and its key, if it is
// a CA and ca.key is its key.
func currentCA(data map[string][]byte) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	bundle := parseCerts(data[CABundle])
	if len(bundle) == 0 || !bundle[0].IsCA {
		return nil, nil, errors.New("no CA certificate")
	}
	key, err := parseKey(data[CAKeyKey])
	if err != nil {
		return nil, nil, err
	}
	if !key.PublicKey.Equal(bundle[0].PublicKey) {
		return nil, nil, errors.New("the CA key is not the CA certificate's")
	}
	return bundle[0], key, nil
}

// renewalTime is when two thirds of cert's lifetime have passed (divided
// first: a lifetime of centuries, as a CA put there by hand may have,
// must not overflow).
func renewalTime(cert *x509.Certificate) time.Time {
	return cert.NotBefore.Add(cert.NotAfter.Sub(cert.NotBefore) / 3 * 2)
}

func renewalDue(cert *x509.Certificate, now time.Time) bool {
	return !now.Before(renewalTime(cert))
}

func validAt(certs []*x509.Certificate, now time.Time) []*x509.Certificate {
	return slices.DeleteFunc(slices.Clone(certs), func(c *x509.Certificate) bool { return !now.Before(c.NotAfter) })
}

func newCA(now time.Time, lifetime time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: caSubject},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	return issue(tmpl, nil, nil, now, lifetime)
}

func newServing(ca *x509.Certificate, caKey *ecdsa.PrivateKey, dnsNames []string, now time.Time, lifetime time.Duration) (certPEM, keyPEM []byte, err error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: dnsNames[0]},
		DNSNames:    dnsNames,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	return issue(tmpl, ca, caKey, now, lifetime)
}

// issue signs tmpl with a new key, by parent (self-signed when nil), valid
// from backdate before now for lifetime.
func issue(tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, now time.Time, lifetime time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("generating a serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-backdate), now.Add(lifetime)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing a certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding a key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// parseCerts returns the certificates of a PEM bundle, skipping what does
// not parse.
func parseCerts(raw []byte) []*x509.Certificate {
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, raw = pem.Decode(raw)
		if block == nil {
			return certs
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			certs = append(certs, cert)
		}
	}
}

func encodeCerts(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

func parseKey(raw []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(raw)
	if block == nil {
		return nil, errors.New("the CA key is not PEM")
	}
	key, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the CA key: %w", err)
	}
	return key, nil
}

// ServiceDNSNames are the names a certificate for Service name in
// namespace is valid for; kube-apiserver verifies the live API as
// <name>.<namespace>.svc.
func ServiceDNSNames(namespace, name string) []string {
	return []string{name + "." + namespace + ".svc", name + "." + namespace + ".svc.cluster.local", name + "." + namespace, name}
}
