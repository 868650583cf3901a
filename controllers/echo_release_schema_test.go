package controllers_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// An Echo the API server admits but whose values the chart's schema
// refuses (a claim size in millibytes) fails its release with the
// schema's message, as Helm words it.
func TestEchoValuesTheSchemaRefusesFailTheRelease(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "milli"}
	size, err := echov1alpha1.NewBoundedQuantity("1500m")
	Expect(err).NotTo(HaveOccurred())
	createEcho(t, newEcho(ns, key.Name, func(e *echov1alpha1.Echo) {
		e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true, Size: &size}
	}))

	Eventually(func(g Gomega) {
		e := getEcho(g, key)
		g.Expect(conditionStatus(e, echov1alpha1.EchoConditionReleaseFailed)).To(Equal(metav1.ConditionTrue))
		c := readyCondition(e)
		g.Expect(c.Reason).To(Equal(echov1alpha1.EchoReasonReleaseFailed))
		g.Expect(c.Message).To(And(ContainSubstring("values don't meet the specifications of the schema"), ContainSubstring("/persistence/size")))
	}, timeout, interval).Should(Succeed())
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
		Should(ContainElement(echov1alpha1.EventReasonReleaseInstallFailed))
}
