package helmreconciler

import (
	"context"
	"io"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The CPU of an install and of an upgrade of the echo chart, in this
// process, with and without the operator's changes to Helm's path: the
// stock path stores records with Helm's Secrets driver and lets Helm
// check the values' schema; the operator's writes records itself, each
// revision once in its final state (recordwrites.go), and checks values
// against the schema compiled once (valuesschema.go). Both sign their records and render against a
// Kubernetes client that prints instead of applying: what is measured is
// the operator's CPU, not the API server's. See docs/benchmarks.md "CPU
// per install and upgrade".

// releasePath is one way of running Helm's actions.
type releasePath struct {
	name     string
	operator bool
}

var releasePaths = []releasePath{{"stock", false}, {"operator", true}}

// releaseBench is the action configuration of one benchmark run.
type releaseBench struct {
	path    releasePath
	secrets corev1client.SecretInterface
	chart   *chart.Chart
	schemas *chartSchemas
	cfg     *action.Configuration
}

func newReleaseBench(b *testing.B, path releasePath, ch *chart.Chart, schemas *chartSchemas) *releaseBench {
	ours, helms, cs := recordStorages()
	var d driver.Driver = helms
	if path.operator {
		d = ours
	}
	kv, err := chartutil.ParseKubeVersion("v1.35.0")
	if err != nil {
		b.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	cfg := &action.Configuration{Releases: storage.Init(d), KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: caps, Log: func(string, ...any) {}}
	return &releaseBench{path: path, secrets: cs.CoreV1().Secrets("ns"), chart: ch, schemas: schemas, cfg: cfg}
}

// checkValues is what the operator's action client does before Helm runs:
// it reports whether Helm's own schema check is skipped.
func (r *releaseBench) checkValues(b *testing.B, vals map[string]any) bool {
	if !r.path.operator {
		return false
	}
	handled, err := r.schemas.validate(r.chart, vals)
	if err != nil {
		b.Fatal(err)
	}
	return handled
}

func (r *releaseBench) install(b *testing.B, vals map[string]any) {
	i := action.NewInstall(r.cfg)
	i.ReleaseName, i.Namespace, i.DisableOpenAPIValidation = "web", "ns", true
	i.SkipSchemaValidation = r.checkValues(b, vals)
	if _, err := i.Run(r.chart, vals); err != nil {
		b.Fatal(err)
	}
}

// forget deletes the release's records, for the next install.
func (r *releaseBench) forget(b *testing.B) {
	list, err := r.secrets.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range list.Items {
		if err := r.secrets.Delete(context.Background(), s.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// upgrade is an upgrade as the reconciler runs it: a dry-run render, then
// the upgrade.
func (r *releaseBench) upgrade(b *testing.B, vals map[string]any) {
	skip := r.checkValues(b, vals)
	for _, dry := range []bool{true, false} {
		u := action.NewUpgrade(r.cfg)
		u.Namespace, u.DisableOpenAPIValidation, u.MaxHistory, u.SkipSchemaValidation = "ns", true, 10, skip
		u.DryRun = dry
		if dry {
			u.DryRunOption = "server"
		}
		if _, err := u.Run("web", r.chart, vals); err != nil {
			b.Fatal(err)
		}
	}
}

func benchValues(b *testing.B, message string) map[string]any {
	return translate(b, echov1alpha1.EchoSpec{Message: message})
}

// BenchmarkReleaseInstall installs a default Echo's release.
func BenchmarkReleaseInstall(b *testing.B) {
	ch := loadEchoChart(b)
	vals := benchValues(b, "hello")
	for _, path := range releasePaths {
		b.Run(path.name, func(b *testing.B) {
			r := newReleaseBench(b, path, ch, &chartSchemas{})
			for b.Loop() {
				r.install(b, vals)
				b.StopTimer()
				r.forget(b)
				b.StartTimer()
			}
		})
	}
}

// BenchmarkReleaseUpgrade upgrades a release whose values change each time,
// keeping 10 revisions.
func BenchmarkReleaseUpgrade(b *testing.B) {
	ch := loadEchoChart(b)
	vals := []map[string]any{benchValues(b, "one"), benchValues(b, "two")}
	for _, path := range releasePaths {
		b.Run(path.name, func(b *testing.B) {
			r := newReleaseBench(b, path, ch, &chartSchemas{})
			r.install(b, vals[0])
			for i := 0; b.Loop(); i++ {
				r.upgrade(b, vals[(i+1)%2])
			}
		})
	}
}
