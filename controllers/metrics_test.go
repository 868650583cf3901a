package controllers_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// gaugeOf reads a gauge of the manager's metrics registry for one Echo,
// and whether it has a series for it.
func gaugeOf(g Gomega, name string, echo types.NamespacedName) (float64, bool) {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "namespace") == echo.Namespace && labelValue(m, "echo") == echo.Name {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// The manager's metrics say when an Echo's last backup succeeded, read
// from the EchoBackups at each scrape.
func TestMetricsShowTheLastSuccessfulBackup(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	echo := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, echo.Name))
	rollOut(t, echo)
	_, found := gaugeOf(Default, "echo_operator_backup_last_success_timestamp_seconds", echo)
	Expect(found).To(BeFalse(), "no series before a backup completes")

	completedBackup(t, ns, "web-1", echo.Name)
	completed := getBackup(Default, types.NamespacedName{Namespace: ns, Name: "web-1"}).Status.CompletionTime
	Expect(completed).NotTo(BeNil())
	Eventually(func(g Gomega) float64 {
		v, found := gaugeOf(g, "echo_operator_backup_last_success_timestamp_seconds", echo)
		g.Expect(found).To(BeTrue())
		return v
	}, timeout, interval).Should(BeNumerically("==", completed.Unix()))
}
