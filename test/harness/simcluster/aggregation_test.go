package simcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

const (
	probeGroup   = "probe.simcluster.test"
	probeVersion = "v1"
	probeService = "probe"
	probeListURL = "/apis/" + probeGroup + "/" + probeVersion + "/namespaces/default/probes"
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// probeObject is the one item the probe extension server lists: it echoes
// the user the front proxy asserted.
type probeObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	RemoteUser        string   `json:"remoteUser"`
	RemoteGroups      []string `json:"remoteGroups"`
}

type probeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []probeObject `json:"items"`
}

// proxiedRequest is what the probe server saw of a list request: the
// asserted user and groups, the client certificate's common name and that
// of the CA it was verified against.
type proxiedRequest struct {
	user, clientCN, verifiedBy string
	groups                     []string
}

// probeServer is a tiny extension API server for the group
// probe.simcluster.test. Its TLS listener accepts only client certificates
// signed by the front-proxy CA; it answers only requests over a
// certificate named in allowedNames, as an extension server must before it
// trusts the X-Remote-* headers.
type probeServer struct {
	allowedNames []string

	mu   sync.Mutex
	seen []proxiedRequest
}

func (p *probeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		http.Error(w, "front-proxy client certificate required", http.StatusUnauthorized)
		return
	}
	chain := r.TLS.VerifiedChains[0]
	client := chain[0].Subject.CommonName
	if !slices.Contains(p.allowedNames, client) {
		http.Error(w, "client certificate "+client+" may not assert users", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/apis/" + probeGroup + "/" + probeVersion:
		_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: probeGroup + "/" + probeVersion,
			APIResources: []metav1.APIResource{{
				Name: "probes", SingularName: "probe", Namespaced: true, Kind: "Probe",
				Verbs: metav1.Verbs{"get", "list"},
			}},
		})
	case probeListURL:
		user, groups := r.Header.Get("X-Remote-User"), r.Header.Values("X-Remote-Group")
		p.mu.Lock()
		p.seen = append(p.seen, proxiedRequest{
			user:       user,
			groups:     groups,
			clientCN:   client,
			verifiedBy: chain[len(chain)-1].Subject.CommonName,
		})
		p.mu.Unlock()
		gv := probeGroup + "/" + probeVersion
		_ = json.NewEncoder(w).Encode(probeList{
			TypeMeta: metav1.TypeMeta{Kind: "ProbeList", APIVersion: gv},
			Items: []probeObject{{
				TypeMeta:     metav1.TypeMeta{Kind: "Probe", APIVersion: gv},
				ObjectMeta:   metav1.ObjectMeta{Name: "probe", Namespace: metav1.NamespaceDefault},
				RemoteUser:   user,
				RemoteGroups: groups,
			}},
		})
	default:
		// /apis (aggregated discovery) and OpenAPI are not served: the
		// aggregator falls back to /apis/<group>/<version>.
		http.NotFound(w, r)
	}
}

func (p *probeServer) requests() []proxiedRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen)
}

// TestAggregation registers an extension API server running on 127.0.0.1
// with the cluster's aggregation layer: kube-apiserver publishes the
// front-proxy CA and header names, the APIService becomes Available, and a
// request through kube-apiserver reaches the server with the caller's
// identity in X-Remote-User, sent over the front-proxy client certificate.
func TestAggregation(t *testing.T) {
	bins := testBinaries(t)
	g := NewWithT(t)
	ctx := t.Context()
	workDir := t.TempDir()
	c, err := Start(ctx, Options{Binaries: bins, WorkDir: workDir})
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("--- kube-apiserver.log (tail)\n%s", logTail(filepath.Join(workDir, "kube-apiserver.log"), 40))
		}
		_ = c.Stop()
	})
	cs, err := kubernetes.NewForConfig(c.Config())
	g.Expect(err).NotTo(HaveOccurred())
	dyn, err := dynamic.NewForConfig(c.Config())
	g.Expect(err).NotTo(HaveOccurred())

	// kube-apiserver publishes what an extension server needs to check the
	// front proxy: its CA, the allowed names and the header names.
	frontProxyCA, err := os.ReadFile(filepath.Join(c.stateDir, "pki", frontProxyCAFile))
	g.Expect(err).NotTo(HaveOccurred())
	var auth *corev1.ConfigMap
	g.Eventually(func(g Gomega) {
		auth, err = cs.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(auth.Data).To(HaveKey("requestheader-client-ca-file"))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(auth.Data["requestheader-client-ca-file"]).To(Equal(string(frontProxyCA)))
	for key, want := range map[string][]string{
		"requestheader-allowed-names":        {FrontProxyClientName},
		"requestheader-username-headers":     {"X-Remote-User"},
		"requestheader-group-headers":        {"X-Remote-Group"},
		"requestheader-extra-headers-prefix": {"X-Remote-Extra-"},
	} {
		var got []string
		g.Expect(json.Unmarshal([]byte(auth.Data[key]), &got)).To(Succeed(), "%s: %q", key, auth.Data[key])
		g.Expect(got).To(Equal(want), key)
	}
	var allowedNames []string
	g.Expect(json.Unmarshal([]byte(auth.Data["requestheader-allowed-names"]), &allowedNames)).To(Succeed())
	block, _ := pem.Decode([]byte(auth.Data["requestheader-client-ca-file"]))
	g.Expect(block).NotTo(BeNil())
	frontProxyCACert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	clientCAs := x509.NewCertPool()
	clientCAs.AddCert(frontProxyCACert)

	// The extension server, on a free loopback port. The aggregator
	// verifies its certificate against the APIService's caBundle for the
	// name <service>.<namespace>.svc, whatever address it dials.
	certDir := filepath.Join(t.TempDir(), "probe")
	serverCA, err := testcerts.Write(certDir, "tls.crt", "tls.key", probeService+"."+metav1.NamespaceDefault+".svc")
	g.Expect(err).NotTo(HaveOccurred())
	pair, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	g.Expect(err).NotTo(HaveOccurred())
	caBundle, err := os.ReadFile(serverCA)
	g.Expect(err).NotTo(HaveOccurred())
	probe := &probeServer{allowedNames: allowedNames}
	srv := httptest.NewUnstartedServer(probe)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    clientCAs,
		MinVersion:   tls.VersionTLS12,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, portStr, err := net.SplitHostPort(srv.Listener.Addr().String())
	g.Expect(err).NotTo(HaveOccurred())
	port, err := strconv.Atoi(portStr)
	g.Expect(err).NotTo(HaveOccurred())

	// An ExternalName Service naming 127.0.0.1: Endpoints and
	// EndpointSlices may not hold a loopback address, but with cluster
	// routing (--enable-aggregator-routing=false) the aggregator resolves an
	// ExternalName Service to https://<externalName>:<APIService port>.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: probeService, Namespace: metav1.NamespaceDefault},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "127.0.0.1",
			Ports:        []corev1.ServicePort{{Name: "https", Port: int32(port)}},
		},
	}
	_, err = cs.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": probeVersion + "." + probeGroup},
		"spec": map[string]any{
			"group":                probeGroup,
			"version":              probeVersion,
			"service":              map[string]any{"namespace": svc.Namespace, "name": svc.Name, "port": int64(port)},
			"caBundle":             base64.StdEncoding.EncodeToString(caBundle),
			"groupPriorityMinimum": int64(1000),
			"versionPriority":      int64(15),
		},
	}}
	_, err = dyn.Resource(apiServiceGVR).Create(ctx, apiService, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// The APIService goes first, then the Service it points at, then the
	// server (cleanups run last in, first out).
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := dyn.Resource(apiServiceGVR).Delete(ctx, apiService.GetName(), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the APIService: %v", err)
		}
		err = cs.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting the Service: %v", err)
		}
	})

	phase := time.Now()
	g.Eventually(func(g Gomega) {
		u, err := dyn.Resource(apiServiceGVR).Get(ctx, apiService.GetName(), metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(And(
			HaveKeyWithValue("type", "Available"),
			HaveKeyWithValue("status", "True"),
		)), "conditions: %v", conds)
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	t.Logf("APIService available in %s", time.Since(phase).Round(time.Millisecond))

	// Discovery through kube-apiserver lists the group's resource.
	g.Eventually(func(g Gomega) {
		res, err := cs.Discovery().ServerResourcesForGroupVersion(probeGroup + "/" + probeVersion)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.APIResources).To(ContainElement(HaveField("Name", "probes")))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	// A list through kube-apiserver as the admin user reaches the server
	// with that user asserted by the front proxy.
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath(probeListURL).DoRaw(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	var list probeList
	g.Expect(json.Unmarshal(raw, &list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].RemoteUser).To(Equal(adminUser))
	g.Expect(list.Items[0].RemoteGroups).To(ContainElement("system:masters"))
	// kube-controller-manager's own clients may list the resource too:
	// only the admin user's requests are this test's.
	byAdmin := slices.DeleteFunc(probe.requests(), func(r proxiedRequest) bool { return r.user != adminUser })
	g.Expect(byAdmin).To(ConsistOf(proxiedRequest{
		user:       adminUser,
		groups:     list.Items[0].RemoteGroups,
		clientCN:   FrontProxyClientName,
		verifiedBy: frontProxyCACert.Subject.CommonName,
	}))

	// Once the APIService is deleted, kube-apiserver no longer serves the
	// group.
	g.Expect(dyn.Resource(apiServiceGVR).Delete(ctx, apiService.GetName(), metav1.DeleteOptions{})).To(Succeed())
	g.Eventually(func(g Gomega) {
		_, err := cs.CoreV1().RESTClient().Get().AbsPath(probeListURL).DoRaw(ctx)
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "err: %v", err)
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(cs.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{})).To(Succeed())
}
