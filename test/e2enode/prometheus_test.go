package e2enode

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/test/harness/promserver"
)

// startPrometheus runs a real Prometheus on the host, which scrapes the
// operator's pods as config/prometheus's ServiceMonitor has the Prometheus
// Operator do (HTTPS, the serving certificate not verified as monitor.yaml
// says by default, the token of a ServiceAccount bound to the
// metrics-reader ClusterRole, the job named after the metrics Service),
// and evaluates the alerts of config/prometheus/prometheusrule.yaml.
func startPrometheus(t *testing.T) *promserver.Server {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := promserver.RuleFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "rules.yaml"), rules)
	writeTestFile(t, filepath.Join(dir, "scraper.token"), scraperToken(t))
	prom := promserver.Start(t, dir, fmt.Sprintf(`
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [rules.yaml]
scrape_configs:
- job_name: %s
  scheme: https
  tls_config: {insecure_skip_verify: true}
  authorization: {credentials_file: scraper.token}
  static_configs: [{targets: [%s]}]
`, metricsService, strings.Join(operatorMetricsTargets(t), ", ")))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Prometheus log:\n%s", prom.LogTail())
		}
	})
	return prom
}

// scraperToken is a token of the ServiceAccount prometheus of the
// operator's namespace, bound to the metrics-reader ClusterRole as
// docs/observability.md tells.
func scraperToken(t *testing.T) string {
	t.Helper()
	if _, err := kubectlErr("get", "serviceaccount", "prometheus", "-n", operatorNamespace); err != nil {
		kubectl(t, "create", "serviceaccount", "prometheus", "-n", operatorNamespace)
		kubectl(t, "create", "clusterrolebinding", "e2enode-prometheus", "--clusterrole=echo-operator-metrics-reader",
			"--serviceaccount="+operatorNamespace+":prometheus")
	}
	tr, err := clientset.CoreV1().ServiceAccounts(operatorNamespace).CreateToken(context.Background(), "prometheus",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// operatorMetricsTargets are the metrics endpoints of the operator's
// running pods, quoted for a static scrape config: the host reaches pod
// addresses through the node's bridge.
func operatorMetricsTargets(t *testing.T) []string {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(operatorNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "control-plane=controller-manager", FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			targets = append(targets, `"`+net.JoinHostPort(p.Status.PodIP, "8443")+`"`)
		}
	}
	if len(targets) == 0 {
		t.Fatalf("no running pod of the operator in %s", operatorNamespace)
	}
	return targets
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
