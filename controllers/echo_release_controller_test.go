package controllers_test

import (
	"context"
	"fmt"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// rolledOutRelease creates the Echo key, waits for its rollout and returns
// the storage of its namespace's releases and its deployed revision, which
// carries label.
func rolledOutRelease(t *testing.T, key types.NamespacedName, label string) (*storage.Storage, *release.Release) {
	t.Helper()
	createEcho(t, newEcho(key.Namespace, key.Name))
	rollOut(t, key)
	st := releaseStorage(key.Namespace)
	deployed, err := st.Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(deployed.Labels).To(HaveKey(label), "a new release is labelled with %s", label)
	return st, deployed
}

// expectRelabelled waits until the release key is labelled with the
// render fingerprint fp again, at the revision it had: not upgraded.
func expectRelabelled(st *storage.Storage, key types.NamespacedName, version int, fp string) {
	Eventually(func(g Gomega) map[string]string {
		last, err := st.Last(key.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Version).To(Equal(version), "the release is not upgraded")
		return last.Labels
	}, timeout, interval).Should(HaveKeyWithValue(releaserecords.FingerprintLabel, fp))
}

// A release deployed before render fingerprints (by an older operator)
// renders to the same manifest: it is labelled with its fingerprint, not
// upgraded, and reconciles of it then take the cached path.
func TestEchoAdoptsAReleaseWithoutFingerprint(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "older"}
	st, deployed := rolledOutRelease(t, key, releaserecords.FingerprintLabel)
	fp := deployed.Labels[releaserecords.FingerprintLabel]

	// What an older operator left: the same release, without the label.
	// Rewriting the release Secret starts a reconcile.
	delete(deployed.Labels, releaserecords.FingerprintLabel)
	Expect(st.Update(deployed)).To(Succeed())
	expectRelabelled(st, key, deployed.Version, fp)

	// From then on an unchanged Echo sends no request.
	helmRuns := reconcileCount("echo-controller")
	requests := managerRequests.snapshot()
	svc := &corev1.Service{}
	Expect(k8sClient.Get(context.Background(), key, svc)).To(Succeed())
	patch := client.MergeFrom(svc.DeepCopy())
	svc.Annotations = map[string]string{"example.test/poke": "1"}
	Expect(k8sClient.Patch(context.Background(), svc, patch)).To(Succeed())
	Eventually(reconcileCount).WithArguments("echo-controller").WithTimeout(timeout).Should(BeNumerically(">", helmRuns))
	Expect(managerRequests.since(requests, ns)).To(BeEmpty())
}

// A release deployed from another chart or by another operator version
// (another fingerprint) with the same values is rendered, and as the
// manifest is unchanged it is labelled with the new fingerprint: no new
// revision, and the Deployment is left alone, so no pod restarts.
func TestEchoKeepsItsRevisionWhenOnlyTheChartChanged(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "upgraded-operator"}
	st, deployed := rolledOutRelease(t, key, releaserecords.ValuesLabel)
	fp := deployed.Labels[releaserecords.FingerprintLabel]
	dep := &appsv1.Deployment{}
	Expect(k8sClient.Get(context.Background(), key, dep)).To(Succeed())

	// What an older chart or operator left: the same values, another
	// fingerprint, on the record the operator wrote (signed, owned by the
	// Echo, so the cache answers for it). Rewriting it starts a reconcile.
	ctx := context.Background()
	secrets := clientset.CoreV1().Secrets(ns)
	record, err := secrets.Get(ctx, fmt.Sprintf("sh.helm.release.v1.%s.v%d", key.Name, deployed.Version), metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	record.Labels[releaserecords.FingerprintLabel] = "rendered-from-an-older-chart"
	signer, err := releasetrust.LoadOrCreateSigner(ctx, k8sClient, testOperatorNamespace)
	Expect(err).NotTo(HaveOccurred())
	signer.Sign(record)
	_, err = secrets.Update(ctx, record, metav1.UpdateOptions{})
	Expect(err).NotTo(HaveOccurred())
	expectRelabelled(st, key, deployed.Version, fp)
	after := &appsv1.Deployment{}
	Expect(k8sClient.Get(context.Background(), key, after)).To(Succeed())
	Expect(after.Generation).To(Equal(dep.Generation), "the Deployment was not written")
	Expect(after.Spec.Template).To(Equal(dep.Spec.Template))
}

// TestFifthUpgradeRequests: an upgrade of an Echo whose history is full
// (the suite keeps 3 revisions) sends what it is for, 7 requests: the
// Deployment's patch, the new revision's record, the previous one
// superseded, the oldest pruned, the latest revision read once, the
// Echo's status written once at Ready, and its Ready Event.
func TestFifthUpgradeRequests(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "often"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)
	for i := range 4 {
		updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = fmt.Sprintf("upgrade %d", i+1) })
		rollOut(t, key)
	}
	waitEventCount(t, ns, key.Name, echov1alpha1.EventReasonReady, 5)
	requests := managerRequests.snapshot()

	updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = "upgrade 5" })
	rollOut(t, key)
	waitEventCount(t, ns, key.Name, echov1alpha1.EventReasonReady, 6)

	sent := managerRequests.since(requests, ns)
	t.Logf("requests of the fifth upgrade: %v", sent)
	records := "/api/v1/namespaces/" + ns + "/secrets"
	Expect(sent).To(And(
		HaveKeyWithValue("PATCH /apis/apps/v1/namespaces/"+ns+"/deployments/often", 1),
		HaveKeyWithValue("POST "+records, 1),
		HaveKeyWithValue("PUT "+records+"/sh.helm.release.v1.often.v5", 1),
		HaveKeyWithValue("DELETE "+records+"/sh.helm.release.v1.often.v3", 1),
		HaveKeyWithValue("PATCH /apis/echo.dev/v1alpha1/namespaces/"+ns+"/echoes/often/status", 1),
		HaveKeyWithValue("POST /apis/events.k8s.io/v1/namespaces/"+ns+"/events", 1),
	))
	// A reconcile that an event of the upgrade's own writes starts before
	// the cache shows them queries the release from the API server (a
	// list of the namespace's release Secrets; see expectations.go): that
	// depends on timing, and is counted apart.
	total := 0
	for req, n := range sent {
		if req != "GET "+records {
			total += n
		}
	}
	Expect(total).To(BeNumerically("<=", 7), "requests of the fifth upgrade: %v", sent)
	Expect(sent["GET "+records]).To(BeNumerically("<=", 2), "lists while the cache catches up: %v", sent)
}

// waitEventCount waits until an Echo has n Events of a reason.
func waitEventCount(t *testing.T, ns, name, reason string, n int) {
	t.Helper()
	Eventually(func(g Gomega) int {
		count := 0
		for _, r := range eventReasons(g, ns, name) {
			if r == reason {
				count++
			}
		}
		return count
	}, timeout, interval).Should(Equal(n))
}
