package simcluster

import (
	"net"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

// servingCertValidity bounds the serving certificate; no cluster runs longer.
const servingCertValidity = 7 * 24 * time.Hour

// envtestSACertFile is the public half of envtestSAKeyFile, envtest's
// --service-account-key-file.
const envtestSACertFile = "sa-signer.crt"

// writeServingCert gives kube-apiserver a serving certificate for every
// name a client may use: loopback and serveAddress for the host's
// processes, and the "kubernetes" Service (its cluster IP and DNS names)
// for pods, whose in-cluster configuration dials the Service. envtest's own
// names only localhost and the listen address; it keeps a certificate it
// finds in the CertDir, and clients trust SecureServing.CA.
func writeServingCert(api *envtest.APIServer, serveAddress string) error {
	ca, err := testcerts.NewCA("simcluster-serving-ca", servingCertValidity)
	if err != nil {
		return err
	}
	serviceIP, err := firstServiceIP()
	if err != nil {
		return err
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1), serviceIP}
	if ip := net.ParseIP(serveAddress); ip != nil && !ip.Equal(ips[0]) {
		ips = append(ips, ip)
	}
	leaf := testcerts.Leaf{CommonName: "kube-apiserver", IPAddresses: ips, DNSNames: []string{"localhost",
		"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}}
	if err := os.MkdirAll(api.CertDir, 0o700); err != nil {
		return err
	}
	if err := ca.WriteSigned(leaf, filepath.Join(api.CertDir, "apiserver.crt"), filepath.Join(api.CertDir, "apiserver.key")); err != nil {
		return err
	}
	api.CA = ca.CertPEM()
	// envtest skips the service-account signing key too when it finds a
	// serving certificate: any key pair does.
	return ca.WriteSigned(testcerts.Leaf{CommonName: "service-accounts"},
		filepath.Join(api.CertDir, envtestSACertFile), filepath.Join(api.CertDir, envtestSAKeyFile))
}

// firstServiceIP is the cluster IP of the "kubernetes" Service: the first
// address of ServiceNetwork.
func firstServiceIP() (net.IP, error) {
	_, network, err := net.ParseCIDR(ServiceNetwork)
	if err != nil {
		return nil, err
	}
	ip := network.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1), nil
}
