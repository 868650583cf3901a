//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/promserver"
)

// A real Prometheus scrapes the real manager, as the ServiceMonitor of
// config/prometheus has it do with its TLS patch (HTTPS verified against
// the CA of the manager's certificate, a ServiceAccount's token authorized
// by the metrics-reader ClusterRole), and evaluates the alerts of
// config/prometheus/prometheusrule.yaml.

// managerJob is the job label the ServiceMonitor gives the manager's
// metrics: the name of its Service. The alerts select it.
const managerJob = "echo-operator-controller-manager-metrics-service"

// alertTimeScale shortens the thresholds that count wall-clock minutes, so
// that what they detect happens within the test: the expressions are the
// shipped ones, only these numbers change. promtool's unit tests
// (test/alerts) check the shipped thresholds.
var alertTimeScale = map[string]string{
	// EchoBackupScheduleMissed: 10 minutes past the next run.
	"(echo_operator_backup_next_scheduled_timestamp_seconds) > 600": "(echo_operator_backup_next_scheduled_timestamp_seconds) > 15",
}

func TestAlertsFireAndResolveInPrometheus(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	h := newHeldEcho(t, alertsNamespace, "watched", "alerts")
	ns, key, storage, mover := h.key.Namespace, h.key, h.storage, h.mover

	prom := startPrometheus(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Prometheus log:\n%s", prom.LogTail())
		}
	})

	t.Run("the manager's metrics are scraped with an authorized token only", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) {
			g.Expect(queryValues(g, prom, `up{job="`+managerJob+`"}`)).To(Equal([]float64{1}))
			g.Expect(queryValues(g, prom, `up{job="unauthorized"}`)).To(Equal([]float64{0}),
				"a token without the metrics-reader role is refused")
			g.Expect(queryValues(g, prom, `leader_election_master_status{job="`+managerJob+`"}`)).To(ContainElement(BeEquivalentTo(1)))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the operator's work is counted", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) {
			g.Expect(queryValues(g, prom, `sum(echo_operator_helm_release_operations_total{operation="install",outcome="success"})`)).
				To(ContainElement(BeNumerically(">=", 1)))
			g.Expect(queryValues(g, prom, `max(echo_operator_echoes{ready="True",reason="Available"})`)).
				To(ContainElement(BeNumerically(">=", 1)))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a failed backup fires EchoBackupFailed until a newer one completes", func(t *testing.T) {
		RegisterTestingT(t)
		backup(t, mover, ns, "watched-1", key.Name, h.refusedStorage("refused-credentials"), echov1alpha1.BackupReasonCredentialsError)
		labels := map[string]string{"alertname": "EchoBackupFailed", "namespace": ns, "echo": key.Name}
		Eventually(func(g Gomega) string { return alertState(g, prom, labels) }, timeout, interval).Should(Equal("firing"))

		backup(t, mover, ns, "watched-2", key.Name, storage, echov1alpha1.BackupReasonCompleted)
		Eventually(func(g Gomega) string { return alertState(g, prom, labels) }, timeout, interval).Should(BeEmpty(), "the alert resolved")
		Eventually(func(g Gomega) []float64 {
			return queryValues(g, prom, `sum(echo_operator_backup_runs_total{outcome="failed",reason="CredentialsError"})`)
		}, timeout, interval).Should(ContainElement(BeNumerically(">=", 1)))
	})

	t.Run("a schedule that cannot start its backup fires EchoBackupScheduleMissed until it does", func(t *testing.T) {
		RegisterTestingT(t)
		// A quota that admits no more EchoBackups in the namespace: the
		// schedule's backup cannot be created.
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-more-backups"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				corev1.ResourceName("count/echobackups." + echov1alpha1.GroupVersion.Group): resource.MustParse("2"),
			}},
		}
		Expect(k8sClient.Create(ctx, quota)).To(Succeed())
		Eventually(func(g Gomega) {
			got := &corev1.ResourceQuota{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(quota), got)).To(Succeed())
			g.Expect(got.Status.Hard).NotTo(BeEmpty(), "the quota controller counted the namespace")
		}, timeout, interval).Should(Succeed())

		sched := &echov1alpha1.EchoBackupSchedule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "every-minute"},
			Spec: echov1alpha1.EchoBackupScheduleSpec{
				Schedule: "* * * * *",
				Template: echov1alpha1.EchoBackupSpec{EchoName: key.Name, Storage: storage},
			},
		}
		Expect(k8sClient.Create(ctx, sched)).To(Succeed())
		// Its runs would go on for the rest of the suite, each holding a pod.
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), sched) })
		labels := map[string]string{"alertname": "EchoBackupScheduleMissed", "namespace": ns, "echo": key.Name}
		Eventually(func(g Gomega) string { return alertState(g, prom, labels) }, 2*time.Minute+timeout, interval).Should(Equal("firing"))

		// The schedule says what stops it, on its condition and in an Event.
		schedKey := client.ObjectKeyFromObject(sched)
		Eventually(func(g Gomega) {
			got := &echov1alpha1.EchoBackupSchedule{}
			g.Expect(k8sClient.Get(ctx, schedKey, got)).To(Succeed())
			ready := meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.ScheduleConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(echov1alpha1.ScheduleReasonBackupNotStarted))
			g.Expect(ready.Message).To(ContainSubstring("exceeded quota"))
			g.Expect(eventMessages(g, schedKey, echov1alpha1.EventReasonBackupNotStarted)).NotTo(BeEmpty())
		}, timeout, interval).Should(Succeed())

		// The quota goes: the schedule's next attempt starts the backup.
		Expect(k8sClient.Delete(ctx, quota)).To(Succeed())
		job := waitJobMatching(t, ns, func(j *batchv1.Job) bool {
			return strings.HasPrefix(j.Name, sched.Name+"-") && strings.HasSuffix(j.Name, "-backup")
		})
		mover.end(t, job)
		Eventually(func(g Gomega) string { return alertState(g, prom, labels) }, timeout, interval).Should(BeEmpty(), "the alert resolved")
	})
}

// alertsNamespace holds the objects of the alerts test. Its Job pods are
// held (see heldJobPodNamespace): the data mover's own exit ends each.
const alertsNamespace = "e2e-alerts"

// backup creates an EchoBackup, runs its data mover for real and waits for
// it to end with the reason want.
func backup(t *testing.T, mover *heldMover, ns, name, echo string, storage echov1alpha1.BackupStorage, want string) {
	t.Helper()
	b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: echo, Storage: storage}}
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	mover.end(t, waitJobNamed(t, ns, name+"-backup"))
	Eventually(func(g Gomega) string {
		got := &echov1alpha1.EchoBackup{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(b), got)).To(Succeed())
		for _, c := range got.Status.Conditions {
			if c.Status == metav1.ConditionTrue {
				return c.Reason
			}
		}
		return ""
	}, timeout, interval).Should(Equal(want))
}

// waitJobMatching waits for a Job of namespace ns that match accepts.
func waitJobMatching(t *testing.T, ns string, match func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	var found *batchv1.Job
	Eventually(func(g Gomega) {
		jobs := &batchv1.JobList{}
		g.Expect(k8sClient.List(context.Background(), jobs, client.InNamespace(ns))).To(Succeed())
		for i := range jobs.Items {
			if match(&jobs.Items[i]) {
				found = &jobs.Items[i]
				return
			}
		}
		g.Expect(found).NotTo(BeNil(), "no matching Job yet")
	}, maxRetryWait+timeout, interval).Should(Succeed())
	return found
}

// maxRetryWait bounds the wait of a controller's next attempt after
// failures (controllers/ratelimit.go).
const maxRetryWait = 30 * time.Second

// startPrometheus runs Prometheus against the manager's metrics endpoint,
// with the shipped rules, and a second scrape of it with a token that has
// no right to read them.
func startPrometheus(t *testing.T) *promserver.Server {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "reader.token"), scraperToken(t, "prometheus", true))
	writeFile(t, filepath.Join(dir, "nobody.token"), scraperToken(t, "nobody", false))
	writeFile(t, filepath.Join(dir, "rules.yaml"), shippedRules(t))
	scrape := func(job, tokenFile string) string {
		return fmt.Sprintf(`
- job_name: %s
  honor_labels: true
  scheme: https
  tls_config: {ca_file: %s}
  authorization: {credentials_file: %s}
  static_configs: [{targets: ["%s"]}]`, job, op.metricsCA, tokenFile, op.metricsAddr)
	}
	return promserver.Start(t, dir, `
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yaml]
scrape_configs:`+scrape(managerJob, "reader.token")+scrape("unauthorized", "nobody.token")+"\n")
}

// scraperToken returns a token of a new ServiceAccount of the operator's
// namespace, bound to the metrics-reader ClusterRole of config/rbac when
// reader is set.
func scraperToken(t *testing.T, name string, reader bool) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name}}
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, sa))).To(Succeed())
	if reader {
		role := &rbacv1.ClusterRole{}
		raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", "metrics_reader_role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(raw, role)).To(Succeed())
		role.Name = "echo-operator-" + role.Name // the prefix of config/default
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, role))).To(Succeed())
		Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-prometheus-metrics-reader"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
		}))).To(Succeed())
	}
	tr, err := clientset.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// shippedRules returns the rule groups of the PrometheusRule the operator
// ships, as a Prometheus rule file, with alertTimeScale applied.
func shippedRules(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "prometheusrule.yaml"))
	Expect(err).NotTo(HaveOccurred())
	rules, err := promserver.RuleFile(raw)
	Expect(err).NotTo(HaveOccurred())
	for from, to := range alertTimeScale {
		Expect(strings.Count(rules, from)).To(Equal(1), "the rules hold %q once", from)
		rules = strings.Replace(rules, from, to, 1)
	}
	return rules
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
}

// queryValues runs an instant query and returns its values.
func queryValues(g Gomega, prom *promserver.Server, query string) []float64 {
	samples, err := prom.Query(query)
	g.Expect(err).NotTo(HaveOccurred())
	values := make([]float64, 0, len(samples))
	for _, s := range samples {
		values = append(values, s.Value)
	}
	return values
}

// alertState is the state (pending, firing) of the alert whose labels
// include want, empty when Prometheus holds none.
func alertState(g Gomega, prom *promserver.Server, want map[string]string) string {
	alerts, err := prom.Alerts()
	g.Expect(err).NotTo(HaveOccurred())
next:
	for _, a := range alerts {
		for k, v := range want {
			if a.Labels[k] != v {
				continue next
			}
		}
		return a.State
	}
	return ""
}
