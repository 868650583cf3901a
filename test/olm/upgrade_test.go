//go:build linux

package olm

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// TestUpgrade installs a made-up earlier release (0.0.9, the same manifests
// under another version) for all namespaces, checks that its permissions
// then hold cluster-wide, creates an Echo, and lets OLM upgrade to the
// bundle of bundle/, whose channel entry replaces 0.0.9.
// Both InstallPlans are approved by hand, so the Echo exists before the
// upgrade starts. The new CSV succeeds, the old one is removed, and the
// Echo is left as it was.
func TestUpgrade(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	tc := buildTestCatalog(t, true)
	serveCatalog(t, "echo-operator-upgrades", tc)

	createOperatorGroup(t, globalNamespace, "global-operators")
	sub := subscription{
		namespace: globalNamespace, name: packageName, channel: tc.defaultChannel,
		source: "echo-operator-upgrades", startingCSV: tc.previous, manual: true,
	}.create(t)

	// Each version's manager runs as its Deployment's pod would: OLM
	// finishes an install only once the live API's APIService is
	// Available. It watches a namespace of its own, with nothing in it, so
	// that nothing but OLM could write the Echo this test watches.
	unwatched := map[string]string{"WATCH_NAMESPACE": "upgrade-unwatched"}
	approveInstallPlan(t, sub, tc.previous)
	prevOp := startOperatorAsDeployment(t, waitDeploymentOf(t, globalNamespace, tc.previous, nil), unwatched)
	prev := waitCSVSucceeded(t, globalNamespace, tc.previous)
	// For all namespaces, OLM lifts the CSV's namespaced permissions to a
	// ClusterRole bound cluster-wide: the operator serves every namespace.
	expectGranted(globalNamespace, specOf(prev).Install.Spec.Permissions, "")

	Expect(createNamespace(ctx, "upgrade")).To(Succeed())
	echo := &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: "upgrade", Name: "before-upgrade"},
		Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](2), Message: "installed by 0.0.9"},
	}
	Expect(k8sClient.Create(ctx, echo)).To(Succeed())
	before := echo.DeepCopy()

	approveInstallPlan(t, sub, tc.current)
	newDep := waitDeploymentOf(t, globalNamespace, tc.current, nil)
	// The old version's pod goes as OLM rolls the Deployment; whether it
	// stopped gracefully or had to be killed is not what this test is
	// about (the install test checks a graceful stop).
	_ = prevOp.stop()
	startOperatorAsDeployment(t, newDep, unwatched)
	csv := waitCSVSucceeded(t, globalNamespace, tc.current)
	replaces, _, _ := unstructured.NestedString(csv.Object, "spec", "replaces")
	Expect(replaces).To(Equal(tc.previous), "OLM records the upgrade edge on the new CSV")
	Eventually(func() bool {
		old := newObject(operatorsV1alpha1, "ClusterServiceVersion", globalNamespace, tc.previous)
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(old), old))
	}, timeout, interval).Should(BeTrue(), "the replaced CSV %s is removed", tc.previous)
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sub), sub)).To(Succeed())
		installed, _, _ := unstructured.NestedString(sub.Object, "status", "installedCSV")
		state, _, _ := unstructured.NestedString(sub.Object, "status", "state")
		g.Expect(installed).To(Equal(tc.current))
		g.Expect(state).To(Equal("AtLatestKnown"))
	}, timeout, interval).Should(Succeed())
	expectCRDsEstablished(specOf(csv))

	after := &echov1alpha1.Echo{}
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(echo), after)).To(Succeed())
	Expect(after.UID).To(Equal(before.UID), "the Echo survives the upgrade")
	Expect(after.Generation).To(Equal(before.Generation))
	Expect(after.ResourceVersion).To(Equal(before.ResourceVersion), "nothing wrote the Echo")
	Expect(after.Spec).To(Equal(before.Spec))
}
