package servingcert

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/controlplane"
)

func TestNewAPIService(t *testing.T) {
	g := NewWithT(t)
	a, err := NewAPIService("v1alpha1.live.echo.dev", "echo-operator", "echo-operator-live-api")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Object["spec"]).To(Equal(map[string]any{
		"group": "live.echo.dev", "version": "v1alpha1",
		"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
		"service": map[string]any{"namespace": "echo-operator", "name": "echo-operator-live-api", "port": int64(443)},
	}))
	g.Expect(a.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "echo-operator"))
	_, err = NewAPIService("live", "ns", "svc")
	g.Expect(err).To(HaveOccurred())
}

// TestRegistration: with a Service, the Rotator registers the APIService
// itself and points it back at the Service; Unregister deletes it only
// while it points there.
func TestRegistration(t *testing.T) {
	cfg := controlplane.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	ctx := context.Background()
	ns := createNamespace(t, c)
	r := &Rotator{Client: c, Reader: c, Namespace: ns, SecretName: secretName, APIService: apiServiceName, Service: serviceName,
		Lifetimes: lifetimes, Now: func() time.Time { return start }, Log: logr.Discard()}

	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "a missing APIService is registered, not an error")
	secret, apiService := read(g, c, ns)
	g.Expect(serviceOf(apiService)).To(Equal([]string{ns, serviceName}))
	g.Expect(caBundleOf(apiService)).To(Equal(secret.Data[CABundle]), "registered with the CA in the same check")
	g.Expect(verifiesFor(secret.Data, caBundleOf(apiService), ServiceDNSNames(ns, serviceName)[0], start)).To(BeTrue())

	// Pointed elsewhere (another install took the name), it is pointed back.
	g.Expect(unstructured.SetNestedField(apiService.Object, "elsewhere", "spec", "service", "namespace")).To(Succeed())
	g.Expect(c.Update(ctx, apiService)).To(Succeed())
	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, apiService = read(g, c, ns)
	g.Expect(serviceOf(apiService)).To(Equal([]string{ns, serviceName}))

	deleted, err := Unregister(ctx, c, apiServiceName, "elsewhere", serviceName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeFalse(), "an APIService pointing at another install's Service is left alone")
	_, apiService = read(g, c, ns)

	u := &Unregisterer{Client: c, APIService: apiServiceName, Namespace: ns, Service: serviceName, Log: logr.Discard()}
	g.Expect(u.Start(ctx)).To(Succeed())
	err = c.Get(ctx, client.ObjectKeyFromObject(apiService), apiService)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the live API off, its APIService goes: %v", err)
	deleted, err = Unregister(ctx, c, apiServiceName, ns, serviceName)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(BeFalse(), "nothing left to delete")
}

func serviceOf(apiService *unstructured.Unstructured) []string {
	ns, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "namespace")
	name, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name")
	return []string{ns, name}
}
