package servingcert

import (
	"context"
	"encoding/base64"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/controlplane"
)

const (
	timeout  = 30 * time.Second
	interval = 50 * time.Millisecond

	apiServiceName = "v1alpha1.live.echo.dev"
	serviceName    = "echo-operator-live-api"
	secretName     = "live-api-cert"
)

func TestRotator(t *testing.T) {
	cfg := controlplane.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	createAPIService(t, c)
	t.Run("a check issues once, writes nothing more, and repairs the caBundle", func(t *testing.T) {
		testEnsure(t, c)
	})
	t.Run("every replica serves the Secret's certificate, renewed when the Secret goes", func(t *testing.T) {
		testServeAndHeal(t, cfg, c)
	})
}

func testEnsure(t *testing.T, c client.Client) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := createNamespace(t, c)
	now := start
	r := &Rotator{Client: c, Reader: c, Namespace: ns, SecretName: secretName, APIService: apiServiceName,
		Lifetimes: lifetimes, Now: func() time.Time { return now }, Log: logr.Discard()}

	renewal, err := r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(renewal).To(Equal(start.Add(-time.Minute).Add((lifetimes.Serving + time.Minute) * 2 / 3)))
	secret, apiService := read(g, c, ns)
	g.Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(caBundleOf(apiService)).To(Equal(secret.Data[CABundle]))
	g.Expect(verifiesFor(secret.Data, caBundleOf(apiService), ServiceDNSNames("echo-operator-system", serviceName)[0], now)).To(BeTrue())

	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	again, apiServiceAgain := read(g, c, ns)
	g.Expect(again.ResourceVersion).To(Equal(secret.ResourceVersion), "no write when nothing changed")
	g.Expect(apiServiceAgain.GetResourceVersion()).To(Equal(apiService.GetResourceVersion()), "no write when nothing changed")

	g.Expect(unstructured.SetNestedField(apiServiceAgain.Object, base64.StdEncoding.EncodeToString([]byte("stale")), "spec", "caBundle")).To(Succeed())
	g.Expect(c.Update(ctx, apiServiceAgain)).To(Succeed())
	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, repaired := read(g, c, ns)
	g.Expect(caBundleOf(repaired)).To(Equal(secret.Data[CABundle]))

	// Day 15: the serving certificate, expired, is renewed (valid to day
	// 24); the CA, due on day 20, is not.
	now = start.Add(15 * 24 * time.Hour)
	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	renewed, _ := read(g, c, ns)
	g.Expect(renewed.Data[CABundle]).To(Equal(secret.Data[CABundle]))
	g.Expect(renewed.Data[CertKey]).NotTo(Equal(secret.Data[CertKey]))
	secret = renewed

	// Past two thirds of the CA's lifetime: a new CA, trusted next to the
	// old one, while the certificate of the old one is still served.
	now = start.Add(21 * 24 * time.Hour)
	next, err := r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	rotated, apiService := read(g, c, ns)
	g.Expect(parseCerts(rotated.Data[CABundle])).To(HaveLen(2))
	g.Expect(parseCerts(rotated.Data[CABundle])[1].Raw).To(Equal(parseCerts(secret.Data[CABundle])[0].Raw))
	g.Expect(caBundleOf(apiService)).To(Equal(rotated.Data[CABundle]))
	g.Expect(rotated.Data[CertKey]).To(Equal(secret.Data[CertKey]), "the new CA signs nothing before it is trusted")
	g.Expect(next).To(Equal(now.Add(caTrustDelay)))

	// Once it is: a certificate it signs.
	now = next
	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	reissued, apiService := read(g, c, ns)
	g.Expect(reissued.Data[CABundle]).To(Equal(rotated.Data[CABundle]))
	g.Expect(reissued.Data[CertKey]).NotTo(Equal(secret.Data[CertKey]))
	g.Expect(verifiesFor(reissued.Data, caBundleOf(apiService), ServiceDNSNames("echo-operator-system", serviceName)[0], now)).To(BeTrue())
}

func testServeAndHeal(t *testing.T, cfg *rest.Config, c client.Client) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns := createNamespace(t, c)
	provider := NewSecretProvider(kubernetes.NewForConfigOrDie(cfg), ns, secretName, logr.Discard())
	var enqueued atomic.Int32
	provider.AddListener(listenerFunc(func() { enqueued.Add(1) }))
	g.Expect(provider.RunOnce(ctx)).To(Succeed(), "a missing Secret is no error")
	cert, _ := provider.CurrentCertKeyContent()
	g.Expect(cert).To(BeEmpty())
	go provider.Run(ctx, 1)
	r := &Rotator{Client: c, Reader: c, Namespace: ns, SecretName: secretName, APIService: apiServiceName,
		Lifetimes: DefaultLifetimes, Changes: provider.Changes(), Log: logr.Discard()}
	go func() { _ = r.Start(ctx) }()

	served := func(g Gomega) []byte {
		secret, _ := read(g, c, ns)
		cert, key := provider.CurrentCertKeyContent()
		g.Expect(cert).To(Equal(secret.Data[CertKey]))
		g.Expect(key).To(Equal(secret.Data[KeyKey]))
		return cert
	}
	var first []byte
	g.Eventually(func(g Gomega) { first = served(g) }, timeout, interval).Should(Succeed())
	g.Expect(enqueued.Load()).To(BeNumerically(">=", 1), "the server was told of the certificate")

	// The Secret deleted: the leader issues a new CA and certificate at
	// once, and the replica serves them.
	secret, _ := read(g, c, ns)
	g.Expect(c.Delete(ctx, secret)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(served(g)).NotTo(Equal(first))
		renewed, apiService := read(g, c, ns)
		g.Expect(caBundleOf(apiService)).To(Equal(renewed.Data[CABundle]))
		g.Expect(renewed.Data[CABundle]).NotTo(Equal(secret.Data[CABundle]))
	}, timeout, interval).Should(Succeed())

	// A pair that is not one is not served; the leader replaces it.
	before := served(g)
	bad, _ := read(g, c, ns)
	bad.Data[KeyKey] = []byte("not a key")
	g.Expect(c.Update(ctx, bad)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(served(g)).NotTo(Equal(before))
	}, timeout, interval).Should(Succeed())
}

type listenerFunc func()

func (f listenerFunc) Enqueue() { f() }

// createAPIService registers the APIService the Rotator keeps; no server
// answers for it, which the Rotator does not need.
func createAPIService(t *testing.T, c client.Client) {
	t.Helper()
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": apiServiceName},
		"spec": map[string]any{
			"group": "live.echo.dev", "version": "v1alpha1",
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"service": map[string]any{"namespace": "echo-operator-system", "name": serviceName, "port": int64(443)},
		},
	}}
	if err := c.Create(context.Background(), apiService); err != nil {
		t.Fatal(err)
	}
}

func createNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "servingcert-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// read returns the Secret and the APIService as stored.
func read(g Gomega, c client.Client, ns string) (*corev1.Secret, *unstructured.Unstructured) {
	ctx := context.Background()
	secret := &corev1.Secret{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret)
	g.Expect(apierrors.IsNotFound(err)).To(BeFalse(), "the Secret exists")
	g.Expect(err).NotTo(HaveOccurred())
	apiService := &unstructured.Unstructured{}
	apiService.SetAPIVersion("apiregistration.k8s.io/v1")
	apiService.SetKind("APIService")
	g.Expect(c.Get(ctx, client.ObjectKey{Name: apiServiceName}, apiService)).To(Succeed())
	return secret, apiService
}

func caBundleOf(apiService *unstructured.Unstructured) []byte {
	encoded, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle")
	raw, _ := base64.StdEncoding.DecodeString(encoded)
	return raw
}
