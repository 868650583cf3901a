package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
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

// counterOf sums the samples of a counter, or the sample counts of a
// histogram, of the manager's metrics registry whose labels include want.
func counterOf(g Gomega, name string, want map[string]string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				if labelValue(m, k) != v {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// A backup that finishes is counted once its end is written, by outcome
// and reason; a complete one gives its duration, size and files.
func TestMetricsCountFinishedBackups(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	complete := map[string]string{"outcome": "complete", "reason": echov1alpha1.BackupReasonCompleted}
	refused := map[string]string{"outcome": "failed", "reason": echov1alpha1.BackupReasonCredentialsError}
	moverRefused := map[string]string{"operation": "backup", "reason": echov1alpha1.BackupReasonCredentialsError}
	counted := []struct {
		name   string
		labels map[string]string
		before float64
	}{
		{name: "echo_operator_backup_runs_total", labels: complete},
		{name: "echo_operator_backup_runs_total", labels: refused},
		{name: "echo_operator_datamover_failures_total", labels: moverRefused},
		{name: "echo_operator_backup_size_bytes"},
		{name: "echo_operator_backup_files"},
		{name: "echo_operator_backup_duration_seconds"},
	}
	for i := range counted {
		counted[i].before = counterOf(Default, counted[i].name, counted[i].labels)
	}

	createEcho(t, newEcho(ns, "web"))
	rollOut(t, types.NamespacedName{Namespace: ns, Name: "web"})
	completedBackup(t, ns, "web-full", "web")
	Expect(getBackup(Default, types.NamespacedName{Namespace: ns, Name: "web-full"}).Status.Files).To(BeEquivalentTo(1),
		"the status reports the files the mover stored")

	b := newBackup(ns, "web-refused", "web")
	Expect(k8sClient.Create(ctx, b)).To(Succeed())
	finishMoverJob(t, waitJob(t, ns, "web-refused-backup"),
		`{"error":"S3 refused the credentials","reason":"AccessDenied","retryable":false}`, false)

	Eventually(func(g Gomega) {
		for _, c := range counted {
			g.Expect(counterOf(g, c.name, c.labels)).To(BeNumerically(">=", c.before+1), "%s%v", c.name, c.labels)
		}
	}, timeout, interval).Should(Succeed())
}
