package olmnode

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/promserver"
)

const (
	// helmRelease and helmNamespace are docs/install.md's ("With Helm").
	helmRelease, helmNamespace = "echo-operator", "echo-operator-system"
	// helmTimeout bounds each helm command.
	helmTimeout = 5 * time.Minute
	// promCRDs are the Prometheus Operator's CRDs, reduced to their names.
	promCRDs = "test/olm/testdata/prometheus-operator-crds"
)

var (
	serviceMonitorKind = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
	podMonitorKind     = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}
	prometheusRuleKind = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}
)

// TestHelmInstallUpgradeUninstall follows docs/install.md's "With Helm"
// with the real helm CLI: the chart installed with the images built here,
// by digest; the sample Echo served by its pods; `helm upgrade` with new
// resources rolls the manager while the Echo keeps answering, its pods
// and Deployment untouched; the monitoring switched on where the
// Prometheus Operator's CRDs are, and a real Prometheus scraping the
// manager and the echo servers as the ServiceMonitor and the PodMonitor
// say, with the rules of the PrometheusRule; then `helm uninstall`, which
// leaves nothing of the chart but the CRDs, deleted as the documentation
// says, and the namespace's deletion completes.
func TestHelmInstallUpgradeUninstall(t *testing.T) {
	const team = "team-helm"
	explainOnFailure(t, helmNamespace, team)
	operatorImage := "quay.io/" + org + "/echo-operator@" + registryDigest(t, org+"/echo-operator", "v"+currentVersion)
	echoImage := "quay.io/" + org + "/echo-server@" + registryDigest(t, org+"/echo-server", "v"+currentVersion)

	install := docHelmCommand(t, "helm install echo-operator")
	runHelm(t, append(install, "--set", "image.digest="+strings.Split(operatorImage, "@")[1],
		"--set", "echoImage.digest="+strings.Split(echoImage, "@")[1])...)
	runDocumented(t, documented("label", "namespace", "echo-operator-system", "pod-security.kubernetes.io/enforce=restricted"))
	runDocumented(t, documented("rollout", "status", "-n", "echo-operator-system", "deployment/echo-operator-controller-manager"))
	checkHelmManagerPods(t, operatorImage, "1Gi")
	run(t, "wait", "--for=condition=Available", "apiservice/v1alpha1.live.echo.dev", "--timeout=180s")

	run(t, "create", "namespace", team)
	run(t, "apply", "-n", team, "-f", "config/samples/echo_v1alpha1_echo.yaml")
	waitEchoReady(t, team, 2)
	echo := echoServers(t, team)
	for _, url := range echo.urls {
		if err := echoAnswers(url); err != nil {
			t.Fatal(err)
		}
	}
	if got := echo.pods[0].Spec.Containers[0].Image; got != echoImage {
		t.Errorf("the Echo's pods run %s, want RELATED_IMAGE_ECHO %s", got, echoImage)
	}

	t.Run("upgrade", func(t *testing.T) {
		runDocumented(t, documented("apply", "--server-side", "-f", "helm-charts/echo-operator/crds/"))
		stop := keepAsking(echo.urls)
		runHelm(t, docHelmCommand(t, "--set resources.limits.memory=2Gi")...)
		run(t, "rollout", "status", "-n", helmNamespace, "deployment/"+managerDeployment, "--timeout=180s")
		checkHelmManagerPods(t, operatorImage, "2Gi")
		// The new manager has reconciled the Echo again, leaving it as it was.
		run(t, "wait", "-n", team, "--for=condition=Ready", "echo/"+sample, "--timeout=180s")
		asked, failed := stop()
		if asked == 0 || len(failed) > 0 {
			t.Errorf("while the manager rolled, the Echo answered %d of %d requests; failures: %v", asked-len(failed), asked, failed)
		}
		after := echoServers(t, team)
		if !slices.Equal(podUIDs(after.pods), podUIDs(echo.pods)) || after.generation != echo.generation {
			t.Errorf("the upgrade touched the Echo: pods %v, Deployment generation %d; before %v, %d",
				podUIDs(after.pods), after.generation, podUIDs(echo.pods), echo.generation)
		}
	})

	t.Run("monitoring", func(t *testing.T) {
		run(t, "apply", "-f", promCRDs)
		run(t, "wait", "--for=condition=Established", "-f", promCRDs, "--timeout=60s")
		runHelm(t, docHelmCommand(t, "--set monitoring.serviceMonitor.enabled=true")...)
		run(t, "create", "namespace", "monitoring")
		run(t, "create", "serviceaccount", "prometheus-k8s", "-n", "monitoring")
		runDocumented(t, documented("create", "clusterrolebinding", "prometheus-echo-operator-metrics",
			"--clusterrole=echo-operator-metrics-reader", "--serviceaccount=monitoring:prometheus-k8s"))
		checkScrapedAsMonitorsSay(t)
	})

	t.Run("uninstall", func(t *testing.T) {
		run(t, "delete", "-n", team, "echo/"+sample, "--timeout=180s")
		runHelm(t, docHelmCommand(t, "helm uninstall")...)
		run(t, "wait", "-n", helmNamespace, "--for=delete", "deployment/"+managerDeployment, "--timeout=180s")
		left := run(t, "get", "-A", "-o", "name", "-l", "app.kubernetes.io/instance="+helmRelease+",app.kubernetes.io/managed-by=Helm",
			"clusterroles,clusterrolebindings,apiservices,deployments,services,serviceaccounts,roles,rolebindings,"+
				"poddisruptionbudgets,configmaps,servicemonitors,podmonitors,prometheusrules")
		if strings.TrimSpace(left) != "" {
			t.Errorf("helm uninstall left:\n%s", left)
		}
		checkNoLiveAPIService(t)
		if out := runHelm(t, "list", "-n", helmNamespace, "-q"); strings.TrimSpace(out) != "" {
			t.Errorf("helm list after the uninstall: %s", out)
		}
		// Helm leaves the CRDs of crds/, as the documentation says.
		run(t, "get", "crd", "echoes.echo.dev")
		runDocumented(t, documented("delete", "crd", "echoes.echo.dev", "echobackups.echo.dev",
			"echobackupschedules.echo.dev", "echobackuplocations.echo.dev", "echorestores.echo.dev"))
		run(t, "delete", "clusterrolebinding", "prometheus-echo-operator-metrics")
		run(t, "delete", "-f", promCRDs)
		run(t, "delete", "namespace", "monitoring", team, "--timeout=180s")
		runDocumented(t, documented("delete", "namespace", "echo-operator-system"))
		checkNothingLeft(t, helmNamespace, team, "monitoring")
	})
}

// docHelmCommand is the one helm command of the first sh block of
// docs/install.md that holds mark, as helm's arguments, with the
// documentation's registry replaced by the names the suite's images have.
func docHelmCommand(t *testing.T, mark string) []string {
	t.Helper()
	var found []string
	for _, c := range docShellCommands(t, mark) {
		if strings.HasPrefix(c, "helm ") {
			found = append(found, c)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s's block with %q shows %d helm commands: %q", installDoc, mark, len(found), found)
	}
	c := strings.ReplaceAll(found[0], "registry.example.com/echo/", "quay.io/"+org+"/")
	return strings.Fields(c)[1:]
}

// runHelm runs the helm CLI against the suite's cluster, in the
// repository's root as the documentation's paths are, with its caches in
// the test's directory, and fails the test on error.
func runHelm(t *testing.T, args ...string) string {
	t.Helper()
	bin := os.Getenv("HELM")
	if bin == "" {
		t.Fatal("HELM is not set: run the suite with make test-env's environment")
	}
	home := t.TempDir()
	h := kubectl
	h.Env = []string{"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data")}
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	out, err := h.Command(ctx, "", bin, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("helm %s:\n%s", strings.Join(args, " "), out)
	return out
}

// registryDigest is the digest the builder's registry serves for
// repo:tag, which the node pulls.
func registryDigest(t *testing.T, repo, tag string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodHead, "http://"+builder.Registry.Host+"/v2/"+repo+"/manifests/"+tag, nil)
	must(t, err)
	req.Header.Set("Accept", strings.Join([]string{"application/vnd.oci.image.index.v1+json",
		"application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
		"application/vnd.docker.distribution.manifest.v2+json"}, ","))
	resp, err := (&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}).Do(req)
	must(t, err)
	_ = resp.Body.Close()
	digest := resp.Header.Get("Docker-Content-Digest")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("the registry's %s:%s: %s, digest %q", repo, tag, resp.Status, digest)
	}
	return digest
}

// checkHelmManagerPods checks that the chart's Deployment runs image in
// two ready pods with memoryLimit.
func checkHelmManagerPods(t *testing.T, image, memoryLimit string) {
	t.Helper()
	pods, err := clientset.CoreV1().Pods(helmNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	must(t, err)
	ready := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		c := p.Spec.Containers[0]
		if c.Image != image || c.Resources.Limits.Memory().String() != memoryLimit {
			t.Errorf("pod %s runs %s with a memory limit of %s, want %s and %s", p.Name, c.Image, c.Resources.Limits.Memory(), image, memoryLimit)
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Ready {
				ready++
			}
		}
	}
	if ready != 2 {
		t.Fatalf("%d ready manager containers in %s, want 2:\n%s", ready, helmNamespace, describePods(helmNamespace))
	}
	// The leader keeps the NetworkPolicy of the manager's pods.
	run(t, "wait", "-n", helmNamespace, "--for=create", "networkpolicy/"+managerDeployment, "--timeout=60s")
}

// echoServer is the sample Echo's pods, the URLs of their HTTP port, which
// the host reaches on the node's bridge, and its Deployment's generation.
type echoServer struct {
	pods       []corev1.Pod
	urls       []string
	generation int64
}

func echoServers(t *testing.T, namespace string) echoServer {
	t.Helper()
	ctx := context.Background()
	pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + sample})
	must(t, err)
	d, err := clientset.AppsV1().Deployments(namespace).Get(ctx, sample, metav1.GetOptions{})
	must(t, err)
	e := echoServer{generation: d.Generation}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
			continue
		}
		e.pods = append(e.pods, p)
		e.urls = append(e.urls, "http://"+net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(containerPort(p, "http"))))+"/helm")
	}
	slices.SortFunc(e.pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if len(e.pods) == 0 {
		t.Fatalf("no pod of the Echo in %s:\n%s", namespace, describePods(namespace))
	}
	return e
}

// containerPort is the number of the pod's first container's port name.
func containerPort(p corev1.Pod, name string) int32 {
	for _, port := range p.Spec.Containers[0].Ports {
		if port.Name == name {
			return port.ContainerPort
		}
	}
	return 0
}

func podUIDs(pods []corev1.Pod) []string {
	var uids []string
	for _, p := range pods {
		uids = append(uids, string(p.UID))
	}
	return uids
}

var echoClient = &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}

// echoAnswers asks the echo server at url and checks its message.
func echoAnswers(url string) error {
	resp, err := echoClient.Get(url)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"message":"Hello from `+sample+`"`) {
		return fmt.Errorf("%s answered %s: %s", url, resp.Status, body)
	}
	return nil
}

// keepAsking asks each url every 200 ms until the returned stop is
// called, which returns how many requests it made and the failures.
func keepAsking(urls []string) (stop func() (int, []string)) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var asked int
	var failed []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			for _, url := range urls {
				asked++
				if err := echoAnswers(url); err != nil {
					failed = append(failed, err.Error())
				}
			}
		}
	}()
	return func() (int, []string) {
		close(done)
		wg.Wait()
		return asked, failed
	}
}

// checkScrapedAsMonitorsSay translates the chart's ServiceMonitor and
// PodMonitor, as the cluster holds them, into a real Prometheus' scrape
// configuration as the Prometheus Operator would (their selected
// endpoints, scheme, path, TLS and labels; Prometheus' token is that of
// the ServiceAccount the documentation binds to the metrics-reader role),
// loads the PrometheusRule's groups as its rules (Prometheus starts only
// with valid rules), and waits until every manager replica and echo
// server is up and the manager's metrics are read.
func checkScrapedAsMonitorsSay(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	token := strings.TrimSpace(run(t, "create", "token", "prometheus-k8s", "-n", "monitoring", "--duration=1h"))
	must(t, os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600))

	monitor := mustGet(t, serviceMonitorKind, helmNamespace, "echo-operator-controller-manager-metrics-monitor")
	managerJob, managerTargets := serviceMonitorJob(t, monitor, filepath.Join(dir, "token"))
	podMonitor := mustGet(t, podMonitorKind, helmNamespace, "echo-operator-echo-servers")
	echoJob := podMonitorJob(t, podMonitor)
	rule := mustGet(t, prometheusRuleKind, helmNamespace, "echo-operator-alerts")
	if groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups"); len(groups) == 0 {
		t.Fatal("the PrometheusRule has no rule groups")
	}
	rules, err := sigsyaml.Marshal(rule.Object["spec"])
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600))
	config, err := sigsyaml.Marshal(map[string]any{
		"global":         map[string]any{"scrape_interval": "2s", "evaluation_interval": "2s"},
		"rule_files":     []string{"rules.yaml"},
		"scrape_configs": []any{managerJob, echoJob},
	})
	must(t, err)
	t.Logf("prometheus.yml:\n%s", config)
	prom := promserver.Start(t, dir, string(config))

	for query, want := range map[string]int{
		fmt.Sprintf(`up{job=%q} == 1`, managerJob["job_name"]):                                managerTargets,
		fmt.Sprintf(`up{job=%q} == 1`, echoJob["job_name"]):                                   2,
		fmt.Sprintf(`echo_operator_echoes{ready="True",job=%q} >= 1`, managerJob["job_name"]): managerTargets,
	} {
		must(t, poll(ctx, 2*time.Minute, "Prometheus' "+query, func(context.Context) (bool, string, error) {
			samples, err := prom.Query(query)
			if err != nil {
				return false, err.Error(), nil
			}
			return len(samples) == want, fmt.Sprintf("%v; log: %s", samples, prom.LogTail()), nil
		}))
	}
}

// mustGet is the object of kind in namespace, or fails the test.
func mustGet(t *testing.T, gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := get(context.Background(), gvk, namespace, name)
	must(t, err)
	if obj == nil {
		t.Fatalf("no %s %s/%s", gvk.Kind, namespace, name)
	}
	return obj
}

// serviceMonitorJob is the scrape job of the ServiceMonitor's first
// endpoint: the ready endpoints of the Services it selects in its
// namespace, on the port it names, and how many they are.
func serviceMonitorJob(t *testing.T, monitor *unstructured.Unstructured, tokenFile string) (map[string]any, int) {
	t.Helper()
	ctx := context.Background()
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has %d endpoints, this test translates one", len(endpoints))
	}
	ep := endpoints[0].(map[string]any)
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	services, err := clientset.CoreV1().Services(monitor.GetNamespace()).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	must(t, err)
	// The Prometheus Operator would scrape the named port of each.
	if len(services.Items) != 1 || services.Items[0].Name != "echo-operator-controller-manager-metrics-service" {
		t.Fatalf("the ServiceMonitor selects %d Services, want the metrics Service alone: %v", len(services.Items), services.Items)
	}
	svc := services.Items[0]
	slicesList, err := clientset.DiscoveryV1().EndpointSlices(svc.Namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
	must(t, err)
	var targets []string
	for _, s := range slicesList.Items {
		for _, p := range s.Ports {
			if p.Name == nil || *p.Name != ep["port"] || p.Port == nil {
				continue
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					targets = append(targets, net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port))))
				}
			}
		}
	}
	if len(targets) == 0 {
		t.Fatalf("no ready endpoint of Service %s on port %v", svc.Name, ep["port"])
	}
	insecure, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
	honor, _, _ := unstructured.NestedBool(ep, "honorLabels")
	// The Prometheus Operator names the job after the Service.
	return map[string]any{
		"job_name":       svc.Name,
		"scheme":         ep["scheme"],
		"metrics_path":   ep["path"],
		"honor_labels":   honor,
		"tls_config":     map[string]any{"insecure_skip_verify": insecure},
		"authorization":  map[string]any{"credentials_file": tokenFile},
		"static_configs": []any{map[string]any{"targets": targets}},
	}, len(targets)
}

// podMonitorJob is the scrape job of the PodMonitor's first endpoint: the
// running pods it selects in every namespace (its namespaceSelector is
// any), on the port it names, with its relabeling of the pod's instance
// label into echo.
func podMonitorJob(t *testing.T, monitor *unstructured.Unstructured) map[string]any {
	t.Helper()
	endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "podMetricsEndpoints")
	if anyNamespace, _, _ := unstructured.NestedBool(monitor.Object, "spec", "namespaceSelector", "any"); len(endpoints) != 1 || !anyNamespace {
		t.Fatalf("the PodMonitor has %d endpoints and namespaceSelector.any %v; this test translates one, in every namespace", len(endpoints), anyNamespace)
	}
	ep := endpoints[0].(map[string]any)
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	pods, err := clientset.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(selector).String()})
	must(t, err)
	var static []any
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		port := containerPort(p, fmt.Sprint(ep["port"]))
		static = append(static, map[string]any{
			"targets": []string{net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(port)))},
			"labels":  map[string]string{"namespace": p.Namespace, "pod": p.Name, "echo": p.Labels["app.kubernetes.io/instance"]},
		})
	}
	return map[string]any{
		"job_name":       monitor.GetNamespace() + "/" + monitor.GetName(),
		"scheme":         ep["scheme"],
		"metrics_path":   ep["path"],
		"static_configs": static,
	}
}
