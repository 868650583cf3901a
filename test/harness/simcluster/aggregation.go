package simcluster

import (
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

const (
	// FrontProxyClientName is the common name of the client certificate
	// kube-apiserver presents to extension API servers, and the only name
	// its --requestheader-allowed-names lets assert a user.
	FrontProxyClientName = "front-proxy-client"

	frontProxyCAFile   = "front-proxy-ca.crt"
	frontProxyCertFile = "front-proxy-client.crt"
	frontProxyKeyFile  = "front-proxy-client.key"
	// As long as envtest's serving certificate.
	frontProxyValidity = 7 * 24 * time.Hour
)

// configureAggregation writes a front-proxy CA and its client certificate
// into pkiDir and sets kube-apiserver's aggregation-layer flags, as kubeadm
// does: kube-apiserver proxies the requests for an APIService's group to
// the extension server with that certificate, the user in X-Remote-User,
// X-Remote-Group and X-Remote-Extra-* headers, and publishes the CA and
// the header names in kube-system/extension-apiserver-authentication.
//
// --enable-aggregator-routing stays false: the aggregator dials the
// Service rather than its endpoints, so an ExternalName Service can point
// it at 127.0.0.1, which Endpoints and EndpointSlices may not hold.
func configureAggregation(api *envtest.APIServer, pkiDir string) error {
	ca, err := testcerts.NewCA("front-proxy-ca", frontProxyValidity)
	if err != nil {
		return err
	}
	caFile := filepath.Join(pkiDir, frontProxyCAFile)
	if err := os.WriteFile(caFile, ca.CertPEM(), 0o600); err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(pkiDir, frontProxyCertFile), filepath.Join(pkiDir, frontProxyKeyFile)
	if err := ca.WriteSigned(testcerts.Leaf{CommonName: FrontProxyClientName, Client: true}, certFile, keyFile); err != nil {
		return err
	}
	api.Configure().
		Set("requestheader-client-ca-file", caFile).
		Set("requestheader-allowed-names", FrontProxyClientName).
		Set("requestheader-username-headers", "X-Remote-User").
		Set("requestheader-group-headers", "X-Remote-Group").
		Set("requestheader-extra-headers-prefix", "X-Remote-Extra-").
		Set("proxy-client-cert-file", certFile).
		Set("proxy-client-key-file", keyFile)
	return nil
}
