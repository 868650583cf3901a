package operatorchart

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestChartInstallsWhatMakeDeployDoes renders the chart with its default
// values and config/default with kustomize: every object of the one is in
// the other, equal but for labels, which the chart's hold too but for
// app.kubernetes.io/managed-by (Helm). config/default's Namespace is
// `helm install --create-namespace`'s, its CRDs the chart's crds/.
func TestChartInstallsWhatMakeDeployDoes(t *testing.T) {
	got := render(t, "")
	var want []unstructured.Unstructured
	for _, o := range kustomize(t, "config/default") {
		if o.GetKind() != "Namespace" && o.GetKind() != "CustomResourceDefinition" {
			want = append(want, o)
		}
	}
	if len(want) < 15 {
		t.Fatalf("config/default builds only %v: the comparison would prove little", names(want))
	}
	for _, w := range want {
		g := find(got, w.GetKind(), w.GetName())
		if g == nil {
			t.Errorf("the chart lacks %s %s of config/default", w.GetKind(), w.GetName())
			continue
		}
		checkSameObject(t, g, &w)
	}
	for _, g := range got {
		if find(want, g.GetKind(), g.GetName()) == nil {
			t.Errorf("the chart renders %s %s, which config/default lacks", g.GetKind(), g.GetName())
		}
	}
}

// checkSameObject fails unless got equals want but for labels, of which
// got has want's but app.kubernetes.io/managed-by, which is Helm's.
func checkSameObject(t *testing.T, got, want *unstructured.Unstructured) {
	t.Helper()
	what := want.GetKind() + " " + want.GetName()
	gotLabels := got.GetLabels()
	for k, v := range want.GetLabels() {
		if k == "app.kubernetes.io/managed-by" {
			continue
		}
		if gotLabels[k] != v {
			t.Errorf("%s: label %s is %q, config/default's %q", what, k, gotLabels[k], v)
		}
	}
	if m := gotLabels["app.kubernetes.io/managed-by"]; m != "Helm" {
		t.Errorf("%s: app.kubernetes.io/managed-by is %q", what, m)
	}
	g, w := got.DeepCopy(), want.DeepCopy()
	unstructured.RemoveNestedField(g.Object, "metadata", "labels")
	unstructured.RemoveNestedField(w.Object, "metadata", "labels")
	if !reflect.DeepEqual(g.Object, w.Object) {
		gy, _ := yaml.Marshal(g.Object)
		wy, _ := yaml.Marshal(w.Object)
		t.Errorf("%s differs from config/default's:\n--- chart\n%s\n--- config/default\n%s", what, gy, wy)
	}
}

// TestChartCRDsAreConfigs checks that crds/ holds exactly
// config/crd/bases, byte for byte, as `make manifests` copies it.
func TestChartCRDsAreConfigs(t *testing.T) {
	root := reporoot.Must(t)
	ch, err := chart.Load(filepath.Join(root, chartDir))
	if err != nil {
		t.Fatal(err)
	}
	bases, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("config/crd/bases: %v, %d files", err, len(bases))
	}
	var want, got []string
	for _, b := range bases {
		want = append(want, filepath.Base(b))
	}
	for _, crd := range ch.CRDObjects() {
		got = append(got, filepath.Base(crd.Filename))
		raw, err := os.ReadFile(filepath.Join(root, "config", "crd", "bases", filepath.Base(crd.Filename)))
		if err != nil {
			t.Errorf("%s: %v", crd.Filename, err)
			continue
		}
		if !bytes.Equal(raw, crd.File.Data) {
			t.Errorf("%s differs from config/crd/bases: run make manifests", crd.Filename)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the chart's CRDs are %v, config/crd/bases' %v: run make manifests", got, want)
	}
}

// TestClusterRolesHaveTheGeneratedRules checks the rules of the manager's
// and the live API's ClusterRoles against the files `make manifests`
// generates from the RBAC markers.
func TestClusterRolesHaveTheGeneratedRules(t *testing.T) {
	objs := render(t, "")
	for name, file := range map[string]string{
		"echo-operator-manager-role":  "config/rbac/role.yaml",
		"echo-operator-live-api-role": "config/rbac/liveapi/role.yaml",
	} {
		generated := readObject(t, file)
		want, _, _ := unstructured.NestedSlice(generated.Object, "rules")
		got, _, _ := unstructured.NestedSlice(mustFind(t, objs, "ClusterRole", name).Object, "rules")
		if len(want) < 3 || !reflect.DeepEqual(got, want) {
			t.Errorf("ClusterRole %s's rules are not those of %s (run make manifests):\n got %v\nwant %v", name, file, got, want)
		}
	}
}

// readObject reads the one object of a YAML file of the repository.
func readObject(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(reporoot.Must(t), file))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(bytes.TrimPrefix(raw, []byte("---\n")))
	obj := &unstructured.Unstructured{}
	if err == nil {
		err = obj.UnmarshalJSON(js)
	}
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return obj
}
