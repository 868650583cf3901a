package liveapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

// frontProxyName is the allowed name of the front proxy's certificate.
const frontProxyName = "front-proxy-client"

// TestFrontProxyAuthentication checks that the live API authenticates the
// front proxy's client certificate alone, with the user its headers name,
// and refuses with 401 a bearer token (a ServiceAccount's, say), a client
// certificate of the cluster's client CA, a certificate of the front
// proxy's CA of a name not allowed, and a request with nothing, without
// ever sending a TokenReview.
func TestFrontProxyAuthentication(t *testing.T) {
	g := NewWithT(t)
	proxyCA, err := testcerts.NewCA("front-proxy-ca", time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	clusterCA, err := testcerts.NewCA("kubernetes", time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	client := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "extension-apiserver-authentication"},
		Data: map[string]string{
			"client-ca-file":                     string(clusterCA.CertPEM()),
			"requestheader-client-ca-file":       string(proxyCA.CertPEM()),
			"requestheader-allowed-names":        `["` + frontProxyName + `"]`,
			"requestheader-username-headers":     `["X-Remote-User"]`,
			"requestheader-group-headers":        `["X-Remote-Group"]`,
			"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
		},
	})
	var info genericapiserver.AuthenticationInfo
	serving := &genericapiserver.SecureServingInfo{}
	g.Expect(frontProxyAuthentication(client, &info, serving)).To(Succeed())
	g.Expect(serving.ClientCA).To(BeAssignableToTypeOf(&frontProxy{}), "the server asks for the front proxy's client certificate")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go serving.ClientCA.(dynamiccertificates.ControllerRunner).Run(ctx, 1)

	var seen string
	var groups []string
	handler := genericapifilters.WithAuthentication(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, _ := genericapirequest.UserFrom(r.Context())
		seen, groups = u.GetName(), u.GetGroups()
	}), info.Authenticator, genericapifilters.Unauthorized(Codecs), nil, info.RequestHeaderConfig)
	handler = genericapifilters.WithRequestInfo(handler, &genericapirequest.RequestInfoFactory{
		APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")})
	proxy := clientCert(g, proxyCA, frontProxyName)
	g.Eventually(func() int { return serve(handler, proxy, "").Code }).Should(Equal(http.StatusOK), "once the front proxy's CA is read")
	for _, tc := range []struct {
		name     string
		cert     *x509.Certificate
		token    string
		wantCode int
	}{
		{name: "the front proxy", cert: proxy, wantCode: http.StatusOK},
		{name: "a bearer token, with the front proxy's headers", token: "a-service-account-token", wantCode: http.StatusUnauthorized},
		{name: "a certificate of the cluster's client CA", cert: clientCert(g, clusterCA, "kubernetes-admin"), wantCode: http.StatusUnauthorized},
		{name: "the cluster's client CA with the front proxy's name", cert: clientCert(g, clusterCA, frontProxyName), wantCode: http.StatusUnauthorized},
		{name: "the front proxy's CA, another name", cert: clientCert(g, proxyCA, "someone"), wantCode: http.StatusUnauthorized},
		{name: "nothing", wantCode: http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			seen = ""
			w := serve(handler, tc.cert, tc.token)
			g.Expect(w.Code).To(Equal(tc.wantCode), w.Body.String())
			if tc.wantCode == http.StatusOK {
				g.Expect(seen).To(Equal("alice"))
				g.Expect(groups).To(ContainElement("team-a"))
			} else {
				g.Expect(seen).To(BeEmpty())
			}
		})
	}
	for _, a := range client.Actions() {
		g.Expect(a.GetResource().Resource).To(Equal("configmaps"), "the live API asked kube-apiserver for %s", a.GetResource())
	}
}

// serve sends handler a request of the user alice, of the group team-a,
// in the front proxy's headers, with cert as the TLS client certificate
// and token as the bearer token, when given.
func serve(handler http.Handler, cert *x509.Certificate, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/apis/live.echo.dev/v1alpha1/echorevisions", nil)
	r.Header.Set("X-Remote-User", "alice")
	r.Header.Add("X-Remote-Group", "team-a")
	r.TLS = &tls.ConnectionState{}
	if cert != nil {
		r.TLS.PeerCertificates = []*x509.Certificate{cert}
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	handler.ServeHTTP(w, r)
	return w
}

func clientCert(g Gomega, ca *testcerts.CA, name string) *x509.Certificate {
	certPEM, _, err := ca.Sign(testcerts.Leaf{CommonName: name, Client: true})
	g.Expect(err).NotTo(HaveOccurred())
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return cert
}
