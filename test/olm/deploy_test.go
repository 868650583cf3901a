//go:build linux

package olm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net"
	"os"
	"os/exec"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/servingcert"
)

// What config/default deploys.
const (
	deployNamespace     = "echo-operator-system"
	deployManager       = "echo-operator-controller-manager"
	liveAPIService      = "echo-operator-live-api"
	liveAPICertName     = "echo-operator-live-api-cert"
	deployAppsNamespace = "deployed-apps"
)

// TestDeploy installs the operator as `make deploy` does, applying
// config/default with kubectl, and runs the manager as the Deployment's
// pod would, with its ServiceAccount's token: its RBAC is enough, and the
// live API is Available through kube-apiserver's aggregation layer with the
// certificate the operator keeps itself. `make undeploy` removes it all,
// CRDs included, before the OLM tests install the operator again.
func TestDeploy(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	runKubectl(t, "apply", "--server-side", "-k", "config/default")
	t.Cleanup(func() { undeploy(t) })
	dep := &appsv1.Deployment{}
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: deployManager}, dep)).To(Succeed())
	op := startOperatorAsDeployment(t, dep, nil)

	if !t.Run("the operator keeps the live API's certificate and caBundle", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(op.env).To(HaveKeyWithValue("WATCH_NAMESPACE", ""), "make deploy watches every namespace")
		Expect(op.env).To(HaveKeyWithValue("MEMORY_LIMIT", "1073741824"), "the container's memory limit, for the Go runtime's")
		expectLiveAPIAvailable(t, op, "default")
		expectManagerNetworkPolicy(dep)
		secret := expectCertificateTrusted(t, op, dep)
		Expect(secret.Type).To(Equal(corev1.SecretTypeTLS))
	}) {
		return
	}

	t.Run("an Echo's revisions through the live API", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:   deployAppsNamespace,
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
		}})).To(Succeed())
		key := types.NamespacedName{Namespace: deployAppsNamespace, Name: "web"}
		Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1)},
		})).To(Succeed())
		waitEchoReady(op, key)
		Eventually(func(g Gomega) {
			raw, err := clientset.CoreV1().RESTClient().Get().
				AbsPath("/apis/live.echo.dev/v1alpha1/namespaces/" + key.Namespace + "/echorevisions/web.v1").DoRaw(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(raw)).To(ContainSubstring(`"revision":1`))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a deleted certificate is issued again, from a new CA", func(t *testing.T) {
		RegisterTestingT(t)
		before := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: liveAPICertName}, before)).To(Succeed())
		Expect(k8sClient.Delete(ctx, before)).To(Succeed())
		Eventually(func(g Gomega) {
			op.expectHealthy()
			after := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(before), after)).To(Succeed())
			g.Expect(after.Data[servingcert.CABundle]).NotTo(Equal(before.Data[servingcert.CABundle]))
		}, timeout, interval).Should(Succeed())
		expectCertificateTrusted(t, op, dep)
		// kube-apiserver verifies the live API against the new caBundle.
		Eventually(func(g Gomega) {
			_, err := clientset.CoreV1().RESTClient().Get().
				AbsPath("/apis/live.echo.dev/v1alpha1/namespaces/" + deployAppsNamespace + "/echorevisions").DoRaw(ctx)
			g.Expect(err).NotTo(HaveOccurred())
		}, timeout, interval).Should(Succeed())
	})

	// The Echo goes while the operator runs, which removes its finalizer;
	// then the operator stops, and `make undeploy` can delete the CRDs.
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: deployAppsNamespace, Name: "web"}}
	Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, echo))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(echo), echo))
	}, timeout, interval).Should(BeTrue(), "the Echo is deleted")
	Expect(op.stop()).To(Succeed())
	Expect(op.forbidden()).To(BeEmpty(), "the operator lacks permissions; see %s", op.logPath)
}

// expectCertificateTrusted checks that the APIService's caBundle is the CA
// bundle of the Secret the operator keeps, and that what the manager
// serves at a pod's address verifies against it for the Service's name,
// as kube-apiserver checks it. It returns the Secret. op serves it.
func expectCertificateTrusted(t *testing.T, op *operatorProcess, dep *appsv1.Deployment) *corev1.Secret {
	t.Helper()
	ctx := context.Background()
	secret := &corev1.Secret{}
	Eventually(func(g Gomega) {
		op.expectHealthy()
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: deployNamespace, Name: liveAPICertName}, secret)).To(Succeed())
		apiService := newObject("apiregistration.k8s.io/v1", "APIService", "", livev1alpha1.APIServiceName)
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(apiService), apiService)).To(Succeed())
		encoded, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle")
		g.Expect(encoded).To(Equal(base64.StdEncoding.EncodeToString(secret.Data[servingcert.CABundle])))

		roots := x509.NewCertPool()
		g.Expect(roots.AppendCertsFromPEM(secret.Data[servingcert.CABundle])).To(BeTrue())
		ips := podIPs(t, dep)
		g.Expect(ips).NotTo(BeEmpty())
		conn, err := tls.Dial("tcp", net.JoinHostPort(ips[0], "9443"), &tls.Config{
			RootCAs: roots, ServerName: liveAPIService + "." + deployNamespace + ".svc", MinVersion: tls.VersionTLS12,
		})
		g.Expect(err).NotTo(HaveOccurred())
		served := conn.ConnectionState().PeerCertificates[0].Raw
		_ = conn.Close()
		block, _ := pem.Decode(secret.Data[servingcert.CertKey])
		g.Expect(block).NotTo(BeNil())
		g.Expect(served).To(Equal(block.Bytes), "the manager serves the Secret's certificate")
	}, timeout, interval).Should(Succeed())
	return secret
}

// runKubectl runs kubectl from the repository root as the cluster's
// administrator, as a user of `make deploy` would.
func runKubectl(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(kubectl, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.KubeconfigPath())
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl %v:\n%s", args, out)
}

// undeploy deletes what config/default applied, as `make undeploy` does,
// and waits for the CRDs and the APIService to be gone.
func undeploy(t *testing.T) {
	runKubectl(t, "delete", "--ignore-not-found", "-k", "config/default")
	_ = k8sClient.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deployAppsNamespace}})
	Eventually(func(g Gomega) {
		crds := &unstructured.UnstructuredList{}
		crds.SetAPIVersion("apiextensions.k8s.io/v1")
		crds.SetKind("CustomResourceDefinitionList")
		g.Expect(k8sClient.List(context.Background(), crds)).To(Succeed())
		for _, crd := range crds.Items {
			group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			g.Expect(group).NotTo(Equal(echov1alpha1.GroupVersion.Group), "CRD %s is deleted", crd.GetName())
		}
		apiService := newObject("apiregistration.k8s.io/v1", "APIService", "", livev1alpha1.APIServiceName)
		g.Expect(apierrors.IsNotFound(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(apiService), apiService))).To(BeTrue())
	}, timeout, interval).Should(Succeed(), "make undeploy removes the operator")
}
