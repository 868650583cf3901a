//go:build linux

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/liveapi"
	"github.com/echo-operator/echo-operator/test/harness/fakes3"
)

// TestLiveAPIAnswersOnlyThroughKubeAPIServer plays a tenant pod that calls
// the manager's live API port itself, with its ServiceAccount's token,
// with none, with the front proxy's headers forged, and with a client
// certificate of the cluster's own CA (the administrator's): each gets
// 401, while the same request with the same token through kube-apiserver
// lists the namespace's revisions.
func TestLiveAPIAnswersOnlyThroughKubeAPIServer(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	installUserRoles(t)
	ns := newRestrictedNamespace(t)
	token := serviceAccountToken(t, ns, "view")
	path := "/apis/live.echo.dev/v1alpha1/namespaces/" + ns + "/echorevisions"

	throughAPIServer := rest.AnonymousClientConfig(cfg)
	throughAPIServer.BearerToken = token
	c := liveClientFor(throughAPIServer)
	Eventually(func() error {
		return c.List(ctx, &livev1alpha1.EchoRevisionList{}, client.InNamespace(ns))
	}, timeout, interval).Should(Succeed(), "the ServiceAccount's token lists the revisions through kube-apiserver")

	for name, set := range map[string]func(*http.Request){
		"the ServiceAccount's token": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) },
		"nothing":                    func(*http.Request) {},
		"the front proxy's headers, forged": func(r *http.Request) {
			r.Header.Set("X-Remote-User", "system:admin")
			r.Header.Set("X-Remote-Group", "system:masters")
		},
	} {
		Expect(directCall(path, set, nil)).To(Equal(http.StatusUnauthorized), name)
	}
	admin, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	Expect(err).NotTo(HaveOccurred())
	Expect(directCall(path, func(*http.Request) {}, &admin)).To(Equal(http.StatusUnauthorized),
		"a client certificate of the cluster's CA, not the front proxy's")
}

// directCall sends a GET of path to the manager's live API port, as a pod
// that reaches the manager's address would, and returns the status code.
func directCall(path string, set func(*http.Request), cert *tls.Certificate) int {
	ca, err := os.ReadFile(op.liveAPICA)
	Expect(err).NotTo(HaveOccurred())
	roots := x509.NewCertPool()
	Expect(roots.AppendCertsFromPEM(ca)).To(BeTrue())
	tlsConfig := &tls.Config{RootCAs: roots, ServerName: liveAPIService + "." + operatorNamespace + ".svc", MinVersion: tls.VersionTLS12}
	if cert != nil {
		tlsConfig.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 30 * time.Second}
	req, err := http.NewRequest(http.MethodGet, "https://"+op.liveAPIAddr+path, nil)
	Expect(err).NotTo(HaveOccurred())
	set(req)
	resp, err := hc.Do(req)
	Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	return resp.StatusCode
}

// serviceAccountToken makes a ServiceAccount bound to role in ns and
// returns a token of it, as its pod would hold.
func serviceAccountToken(t *testing.T, ns, role string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-pod"}}
	Expect(k8sClient.Create(ctx, sa)).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-pod-" + role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	})).To(Succeed())
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

func liveClientFor(c *rest.Config) client.Client {
	scheme := runtime.NewScheme()
	Expect(livev1alpha1.AddToScheme(scheme)).To(Succeed())
	lc, err := client.New(c, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return lc
}

// TestLiveAPIBoundsEachUsersRequests plays a tenant that holds
// liveapi.DefaultUserInFlight listings of a storage that does not answer:
// its next request through kube-apiserver is refused with 429 and a
// Retry-After, while another user is served at once, and the tenant is
// served again once its listings have ended.
func TestLiveAPIBoundsEachUsersRequests(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	registerLiveAPI(t)
	installUserRoles(t)
	tn := newTenant(t)
	storage := fakes3.StartAt(t, storageHost)
	storage.Add("slow", fakes3.Slow())
	Expect(tn.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "own-storage", Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": "tenant", "AWS_SECRET_ACCESS_KEY": "tenant-secret"},
	})).To(Succeed())
	Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "slow"},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{
			Endpoint: storage.Endpoint, Bucket: "slow", Prefix: "backups", ForcePathStyle: true,
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "own-storage"},
		}},
	})).To(Succeed())
	tenantHTTP, err := rest.HTTPClientFor(impersonating(tenantUser(tn.ns)))
	Expect(err).NotTo(HaveOccurred())
	// get returns the status code, the Retry-After and the body of a GET
	// of path as the tenant, without client-go's retries of a 429.
	get := func(path string) (int, string, string) {
		resp, err := tenantHTTP.Get(strings.TrimSuffix(cfg.Host, "/") + path)
		Expect(err).NotTo(HaveOccurred())
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(body)
	}
	slowPath := "/apis/live.echo.dev/v1alpha1/namespaces/" + tn.ns + "/storedbackups?labelSelector=live.echo.dev%2Flocation%3Dslow"
	revisionsPath := "/apis/live.echo.dev/v1alpha1/namespaces/" + tn.ns + "/echorevisions"
	served := func(g Gomega) {
		code, _, body := get(revisionsPath)
		g.Expect(code).To(Equal(http.StatusOK), body)
	}
	Eventually(served, timeout, interval).Should(Succeed())

	var slow sync.WaitGroup
	for range liveapi.DefaultUserInFlight {
		slow.Go(func() { get(slowPath) })
	}
	Eventually(func(g Gomega) {
		code, retryAfter, body := get(revisionsPath)
		g.Expect(code).To(Equal(http.StatusTooManyRequests), body)
		g.Expect(retryAfter).To(Equal("1"))
		g.Expect(body).To(ContainSubstring("the live API serves at most 4 requests of one user at once"))
	}, 15*time.Second, interval).Should(Succeed(), "the tenant's request past its bound is refused while its listings wait")
	start := time.Now()
	Expect(liveClient().List(ctx, &livev1alpha1.EchoRevisionList{}, client.InNamespace(tn.ns))).To(Succeed())
	Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second), "another user is served at once")

	slow.Wait()
	Eventually(served, timeout, interval).Should(Succeed(), "the tenant is served again once its listings have ended")
}
