//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/helmreconciler"
	"github.com/echo-operator/echo-operator/test/harness/toolbin"
)

const (
	// maxReleaseHistory is the manager's --max-release-history, which the
	// suite's manager leaves at its default.
	maxReleaseHistory = 3
	// echoChart and echoAppVersion are helm-charts/echo's, as Helm names
	// the chart of a release.
	echoChart      = "echo-0.1.0"
	echoAppVersion = "0.1.0"
)

// helmCLI runs the pinned helm CLI ($HELM, which make builds) against the
// simulated cluster, with its configuration, caches and data in a
// directory of the test's: nothing under $HOME is read or written.
type helmCLI struct {
	bin string
	env []string
}

func newHelmCLI(t *testing.T) *helmCLI {
	t.Helper()
	bin := toolbin.Path(t, "HELM", "the helm CLI")
	home := t.TempDir()
	return &helmCLI{bin: bin, env: []string{
		"HOME=" + home,
		"KUBECONFIG=" + cluster.KubeconfigPath(),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
		"HELM_DRIVER=secret",
		"HELM_KUBECONTEXT=",
		"HELM_NAMESPACE=",
	}}
}

// run runs helm with args and returns its standard output; it must
// succeed.
func (h *helmCLI) run(g Gomega, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), h.env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "helm %s:\n%s%s", strings.Join(args, " "), out, stderr.String())
	return string(out)
}

// decode runs helm with args, which ask for JSON, into out.
func (h *helmCLI) decode(g Gomega, out any, args ...string) {
	text := h.run(g, args...)
	g.Expect(json.Unmarshal([]byte(text), out)).To(Succeed(), "helm %s:\n%s", strings.Join(args, " "), text)
}

// helmListed is a row of `helm list -o json`.
type helmListed struct {
	Name       string `json:"name"`
	Namespace  string `json:"namespace"`
	Revision   string `json:"revision"`
	Status     string `json:"status"`
	Chart      string `json:"chart"`
	AppVersion string `json:"app_version"`
}

// helmRevision is a row of `helm history -o json`.
type helmRevision struct {
	Revision    int    `json:"revision"`
	Status      string `json:"status"`
	Chart       string `json:"chart"`
	AppVersion  string `json:"app_version"`
	Description string `json:"description"`
}

func (r helmRevision) String() string {
	return fmt.Sprintf("%d %s %s %q", r.Revision, r.Status, r.Chart, r.Description)
}

func (h *helmCLI) list(g Gomega, ns string) map[string]helmListed {
	var rows []helmListed
	h.decode(g, &rows, "list", "-n", ns, "-o", "json")
	out := map[string]helmListed{}
	for _, r := range rows {
		out[r.Name] = r
	}
	return out
}

func (h *helmCLI) history(g Gomega, key types.NamespacedName) []helmRevision {
	var rows []helmRevision
	h.decode(g, &rows, "history", chart.ReleaseName(key.Name), "-n", key.Namespace, "-o", "json")
	return rows
}

// expectListed checks that helm list shows the release of every Echo of
// keys deployed, at the revision latest gives, with the Echo chart.
func (h *helmCLI) expectListed(g Gomega, ns string, latest map[string]int) {
	listed := h.list(g, ns)
	g.Expect(listed).To(HaveLen(len(latest)), "helm list -n %s: %v", ns, listed)
	for name, revision := range latest {
		g.Expect(listed).To(HaveKeyWithValue(chart.ReleaseName(name), helmListed{Name: chart.ReleaseName(name), Namespace: ns,
			Revision: fmt.Sprint(revision), Status: "deployed", Chart: echoChart, AppVersion: echoAppVersion}))
	}
}

// expectConsistentHistory checks what helm history shows of an Echo's
// release and returns it: at most maxReleaseHistory revisions, in order,
// of the Echo chart, the latest deployed and the only one, none pending,
// the others superseded or failed.
func (h *helmCLI) expectConsistentHistory(g Gomega, key types.NamespacedName) []helmRevision {
	revs := h.history(g, key)
	g.Expect(revs).NotTo(BeEmpty())
	g.Expect(len(revs)).To(BeNumerically("<=", maxReleaseHistory), "%v", revs)
	for i, r := range revs {
		g.Expect(r.Chart).To(Equal(echoChart), "%v", revs)
		g.Expect(r.AppVersion).To(Equal(echoAppVersion), "%v", revs)
		if i > 0 {
			g.Expect(r.Revision).To(Equal(revs[i-1].Revision+1), "%v", revs)
		}
		if i == len(revs)-1 {
			g.Expect(r.Status).To(Equal("deployed"), "%v", revs)
		} else {
			g.Expect(r.Status).To(BeElementOf("superseded", "failed"), "%v", revs)
		}
	}
	return revs
}

// expectRenderedValues checks that helm get values shows the values the
// operator renders for the Echo's current spec: its translation of the
// Echo, coalesced with the chart's values.yaml as the Helm reconciler
// does before it installs or upgrades.
func (h *helmCLI) expectRenderedValues(g Gomega, key types.NamespacedName) {
	e := getEcho(g, key)
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
	g.Expect(err).NotTo(HaveOccurred())
	translated, err := helmreconciler.EchoTranslator{DefaultImage: echoImage}.Translate(context.Background(), &unstructured.Unstructured{Object: u})
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := chart.Load(filepath.Join(repoRoot, "helm-charts", "echo"))
	g.Expect(err).NotTo(HaveOccurred())
	want, err := chartutil.CoalesceValues(ch, translated)
	g.Expect(err).NotTo(HaveOccurred())
	wantJSON, err := json.Marshal(want)
	g.Expect(err).NotTo(HaveOccurred())
	got := h.run(g, "get", "values", chart.ReleaseName(key.Name), "-n", key.Namespace, "-o", "json")
	g.Expect(got).To(MatchJSON(wantJSON), "helm get values %s", key)
}

// The helm commands docs/architecture.md ("The helm CLI reads the
// releases") shows, as it writes them; the test runs each one. test/docs
// checks kubectl commands only: keep these and the docs in step.
var documentedHelm = []string{
	"list -n NAMESPACE",
	"history NAME -n NAMESPACE",
	"get values NAME -n NAMESPACE",
	"get manifest NAME -n NAMESPACE",
}

// runDocumented runs a command of documentedHelm for the release of key.
func (h *helmCLI) runDocumented(g Gomega, command string, key types.NamespacedName) string {
	args := strings.Fields(command)
	for i, a := range args {
		switch a {
		case "NAME":
			args[i] = chart.ReleaseName(key.Name)
		case "NAMESPACE":
			args[i] = key.Namespace
		}
	}
	return h.run(g, args...)
}

// expectDocumentedCommands runs every documented helm command for the
// release of key and checks that each shows it.
func (h *helmCLI) expectDocumentedCommands(g Gomega, key types.NamespacedName, message string) {
	out := map[string]string{}
	for _, c := range documentedHelm {
		out[c] = h.runDocumented(g, c, key)
	}
	g.Expect(out["list -n NAMESPACE"]).To(MatchRegexp(`(?m)^%s\s+%s\s+\d+\s+.*\sdeployed\s+%s\s+%s\s*$`, key.Name, key.Namespace, echoChart, echoAppVersion))
	g.Expect(out["history NAME -n NAMESPACE"]).To(MatchRegexp(`(?m)^\d+\s+.*\sdeployed\s+%s\s+%s\s`, echoChart, echoAppVersion))
	g.Expect(out["get values NAME -n NAMESPACE"]).To(And(HavePrefix("USER-SUPPLIED VALUES:"), MatchRegexp(`(?m)^message: %s$`, message)))
	expectDeploymentInManifest(g, out["get manifest NAME -n NAMESPACE"], key, getEcho(g, key).Spec.DesiredReplicas().Replicas)
}

// getManifest runs `helm get manifest NAME -n NAMESPACE`.
func (h *helmCLI) getManifest(g Gomega, key types.NamespacedName) string {
	return h.runDocumented(g, "get manifest NAME -n NAMESPACE", key)
}

// expectDeploymentInManifest checks that a release's manifest holds the
// Echo's Deployment, with the replicas the Echo asks for.
func expectDeploymentInManifest(g Gomega, manifest string, key types.NamespacedName, replicas int32) {
	var deployments []appsv1.Deployment
	for _, doc := range strings.Split(manifest, "\n---") {
		var d appsv1.Deployment
		g.Expect(yaml.Unmarshal([]byte(doc), &d)).To(Succeed(), "%s", doc)
		if d.Kind == "Deployment" {
			deployments = append(deployments, d)
		}
	}
	g.Expect(deployments).To(ConsistOf(And(HaveField("Name", key.Name), HaveField("Spec.Replicas", HaveValue(Equal(replicas))))),
		"helm get manifest %s:\n%s", key, manifest)
}

// TestHelmCLIReadsTheReleases has the real helm CLI read the releases the
// operator writes (signed, through its own storage) after installs,
// upgrades, a rollback through the plugin, a failed upgrade and a SIGKILL
// of the operator mid-upgrade: Helm stays the source of truth for users.
func TestHelmCLIReadsTheReleases(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	helm := newHelmCLI(t)
	registerLiveAPI(t)
	ns := newRestrictedNamespace(t)
	alpha := types.NamespacedName{Namespace: ns, Name: "alpha"}
	beta := types.NamespacedName{Namespace: ns, Name: "beta"}
	latest := map[string]int{alpha.Name: 1, beta.Name: 1}

	t.Run("installs", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: alpha.Name},
			Spec: echov1alpha1.EchoSpec{Message: "first", Replicas: ptr.To[int32](2)}})).To(Succeed())
		Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: beta.Name}})).To(Succeed())
		waitReady(t, alpha, 2)
		waitReady(t, beta, 1)
		helm.expectListed(Default, ns, latest)
		for _, key := range []types.NamespacedName{alpha, beta} {
			Expect(helm.expectConsistentHistory(Default, key)).To(HaveLen(1))
			helm.expectRenderedValues(Default, key)
			expectDeploymentInManifest(Default, helm.getManifest(Default, key), key, getEcho(Default, key).Spec.DesiredReplicas().Replicas)
		}
		values := map[string]any{}
		helm.decode(Default, &values, "get", "values", alpha.Name, "-n", ns, "-o", "json")
		Expect(values).To(And(HaveKeyWithValue("message", "first"), HaveKeyWithValue("replicas", BeNumerically("==", 2))))
		helm.expectDocumentedCommands(Default, alpha, "first")
	})

	t.Run("upgrades keep the last revisions", func(t *testing.T) {
		RegisterTestingT(t)
		for _, message := range []string{"second", "third"} {
			updateEcho(t, alpha, func(e *echov1alpha1.Echo) { e.Spec.Message = message })
			waitReady(t, alpha, 2)
			latest[alpha.Name]++
		}
		updateEcho(t, alpha, func(e *echov1alpha1.Echo) { e.Spec.Replicas = ptr.To[int32](3) })
		waitReady(t, alpha, 3)
		latest[alpha.Name]++
		helm.expectListed(Default, ns, latest)
		revs := helm.expectConsistentHistory(Default, alpha)
		Expect(revs).To(HaveLen(maxReleaseHistory))
		Expect(revs[len(revs)-1].Revision).To(Equal(latest[alpha.Name]))
		Expect(revs).To(HaveEach(HaveField("Status", BeElementOf("superseded", "deployed"))))
		helm.expectRenderedValues(Default, alpha)
		expectDeploymentInManifest(Default, helm.getManifest(Default, alpha), alpha, 3)
	})

	t.Run("a rollback through the plugin", func(t *testing.T) {
		RegisterTestingT(t)
		// Revision 3 rendered message third with 2 replicas.
		d := &docsKubectl{ns: ns, env: []string{buildPlugin(t)}, values: map[string]string{"ECHO": alpha.Name, "REVISION": "3"}}
		Expect(d.run(Default, documented("echo", "rollback", "ECHO", "--to-revision", "REVISION", "--yes"))).
			To(ContainSubstring("rolled back to the values of revision 3"))
		waitReady(t, alpha, 2)
		latest[alpha.Name]++
		Expect(getEcho(Default, alpha).Spec.Message).To(Equal("third"))
		helm.expectListed(Default, ns, latest)
		revs := helm.expectConsistentHistory(Default, alpha)
		Expect(revs).To(HaveLen(maxReleaseHistory))
		Expect(revs[len(revs)-1].Revision).To(Equal(latest[alpha.Name]))
		helm.expectRenderedValues(Default, alpha)
	})

	t.Run("a failed upgrade, then a fix", func(t *testing.T) {
		RegisterTestingT(t)
		// The quota lets Helm's checks pass; the API server refuses the
		// Ingress once the revision is stored, so the upgrade fails and
		// the release is rolled back.
		Expect(k8sClient.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-ingresses"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/ingresses.networking.k8s.io": resource.MustParse("0")}}})).To(Succeed())
		updateEcho(t, alpha, func(e *echov1alpha1.Echo) {
			e.Spec.Ingress = &echov1alpha1.IngressSpec{Enabled: true, Host: "alpha.example.test"}
		})
		Eventually(func(g Gomega) {
			revs := helm.expectConsistentHistory(g, alpha)
			g.Expect(revs).To(ContainElement(HaveField("Status", "failed")))
			g.Expect(revs[len(revs)-1].Description).To(HavePrefix("Rollback to "))
			listed := helm.list(g, ns)
			g.Expect(listed).To(HaveKeyWithValue(alpha.Name, HaveField("Status", "deployed")))
		}, timeout, interval).Should(Succeed())
		t.Logf("history after the failed upgrade: %v", helm.history(Default, alpha))

		updateEcho(t, alpha, func(e *echov1alpha1.Echo) {
			e.Spec.Ingress = nil
			e.Spec.Message = "fixed"
		})
		waitReady(t, alpha, 2)
		revs := helm.expectConsistentHistory(Default, alpha)
		Expect(revs[len(revs)-1].Description).To(Equal("Upgrade complete"))
		latest[alpha.Name] = revs[len(revs)-1].Revision
		helm.expectListed(Default, ns, latest)
		helm.expectRenderedValues(Default, alpha)
		Expect(helm.getManifest(Default, alpha)).NotTo(ContainSubstring("kind: Ingress"))
	})

	t.Run("the operator killed mid-upgrade", func(t *testing.T) {
		RegisterTestingT(t)
		const attempts = 8
		landed := false
		for i := 0; i < attempts && !landed; i++ {
			message := fmt.Sprintf("after-kill-%d", i)
			landed = killWhenApplied(t, alpha, latest[alpha.Name]+1, deploymentSays(message), func() {
				updateEcho(t, alpha, func(e *echov1alpha1.Echo) { e.Spec.Message = message })
			})
			waitReady(t, alpha, 2)
			Eventually(func(g Gomega) {
				revs := helm.expectConsistentHistory(g, alpha)
				latest[alpha.Name] = revs[len(revs)-1].Revision
				helm.expectListed(g, ns, latest)
				helm.expectRenderedValues(g, alpha)
			}, timeout, interval).Should(Succeed())
			if landed {
				// The upgrade is run again after the restart: its
				// revision is the latest, deployed, with nothing pending.
				revs := helm.history(Default, alpha)
				t.Logf("history after the kill: %v", revs)
				Expect(revs[len(revs)-1].Status).To(Equal("deployed"))
				Expect(revs).NotTo(ContainElement(HaveField("Status", HavePrefix("pending"))))
			}
		}
		Expect(landed).To(BeTrue(), "no kill landed inside an upgrade in %d attempts", attempts)
		expectDeploymentInManifest(Default, helm.getManifest(Default, alpha), alpha, 2)
		helm.expectListed(Default, ns, latest)
		helm.expectConsistentHistory(Default, beta)
		helm.expectDocumentedCommands(Default, alpha, getEcho(Default, alpha).Spec.Message)
	})
}
