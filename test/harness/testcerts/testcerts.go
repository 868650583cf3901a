package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority (ECDSA P-256) that signs certificates.
type CA struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certPEM  []byte
	validity time.Duration
}

// Leaf describes a certificate for CA.Sign.
type Leaf struct {
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	// Client makes it a client certificate (extended key usage
	// ClientAuth); otherwise it is a server certificate (ServerAuth).
	Client bool
}

// NewCA creates a CA valid from an hour ago until validity from now; the
// certificates it signs are valid as long.
func NewCA(commonName string, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, certPEM: encodePEM("CERTIFICATE", der), validity: validity}, nil
}

// CertPEM is the CA's certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// Sign creates a key and a certificate for it signed by the CA, and returns
// both PEM-encoded (the key as PKCS #8).
func (ca *CA) Sign(l Leaf) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, nil, err
	}
	usage := x509.ExtKeyUsageServerAuth
	if l.Client {
		usage = x509.ExtKeyUsageClientAuth
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: l.CommonName},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ca.validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     l.DNSNames,
		IPAddresses:  l.IPAddresses,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return encodePEM("CERTIFICATE", der), encodePEM("PRIVATE KEY", keyDER), nil
}

// WriteSigned signs l as Sign does and writes the certificate and key to
// certPath and keyPath (mode 0600).
func (ca *CA) WriteSigned(l Leaf, certPath, keyPath string) error {
	certPEM, keyPEM, err := ca.Sign(l)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, keyPEM, 0o600)
}

// Write creates a CA and a server certificate for 127.0.0.1 (and for
// dnsNames, if any) signed by it, valid for a day, writes the server's
// pair as dir/certName and dir/keyName (PEM) and returns the path of the
// CA's PEM file, written beside dir as <dir>-ca.crt: directories of the
// same parent each keep their own CA.
func Write(dir, certName, keyName string, dnsNames ...string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ca, err := NewCA("echo-operator test CA", 24*time.Hour)
	if err != nil {
		return "", err
	}
	leaf := Leaf{CommonName: "127.0.0.1", DNSNames: dnsNames, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	if err := ca.WriteSigned(leaf, filepath.Join(dir, certName), filepath.Join(dir, keyName)); err != nil {
		return "", err
	}
	caFile := filepath.Join(filepath.Dir(dir), filepath.Base(dir)+"-ca.crt")
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o600); err != nil {
		return "", err
	}
	return caFile, nil
}

// serialNumber returns a random positive 128-bit serial number.
func serialNumber() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	return n.Add(n, big.NewInt(1)), nil
}

func encodePEM(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
