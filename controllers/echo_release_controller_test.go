package controllers_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
)

// A release deployed before render fingerprints (by an older operator)
// renders to the same manifest: it is labelled with its fingerprint, not
// upgraded, and reconciles of it then take the cached path.
func TestEchoAdoptsAReleaseWithoutFingerprint(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "older"}
	createEcho(t, newEcho(ns, key.Name))
	rollOut(t, key)

	st := releaseStorage(ns)
	deployed, err := st.Last(key.Name)
	Expect(err).NotTo(HaveOccurred())
	Expect(deployed.Labels).To(HaveKey(releaserecords.FingerprintLabel), "a new release is labelled with its fingerprint")
	fp := deployed.Labels[releaserecords.FingerprintLabel]

	// What an older operator left: the same release, without the label.
	// Rewriting the release Secret starts a reconcile.
	delete(deployed.Labels, releaserecords.FingerprintLabel)
	Expect(st.Update(deployed)).To(Succeed())

	Eventually(func(g Gomega) map[string]string {
		last, err := st.Last(key.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(last.Version).To(Equal(deployed.Version), "the release is not upgraded")
		return last.Labels
	}, timeout, interval).Should(HaveKeyWithValue(releaserecords.FingerprintLabel, fp))

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
