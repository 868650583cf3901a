package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
