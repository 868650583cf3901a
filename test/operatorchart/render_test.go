package operatorchart

import (
	"path/filepath"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

const (
	// chartDir is the operator's chart, relative to the repository.
	chartDir = "helm-charts/echo-operator"
	// releaseName and namespace are docs/install.md's.
	releaseName = "echo-operator"
	namespace   = "echo-operator-system"
)

// render renders the chart as `helm install` does, with values (a values
// file's text) over values.yaml, checked against values.schema.json.
func render(t *testing.T, values string) []unstructured.Unstructured {
	t.Helper()
	objs, err := renderErr(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func renderErr(t *testing.T, values string) ([]unstructured.Unstructured, error) {
	t.Helper()
	ch, err := chart.Load(filepath.Join(reporoot.Must(t), chartDir))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatalf("values %q: %v", values, err)
	}
	return chart.Render(ch, releaseName, namespace, vals.AsMap())
}

// kustomize builds the kustomization dir of the repository as `kustomize
// build` does.
func kustomize(t *testing.T, dir string) []unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(reporoot.Must(t), dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []unstructured.Unstructured
	for _, r := range res.Resources() {
		raw, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(raw); err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

// find is the object of kind and name in objs, or nil.
func find(objs []unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for i := range objs {
		if objs[i].GetKind() == kind && objs[i].GetName() == name {
			return &objs[i]
		}
	}
	return nil
}

// mustFind is find's object, or fails the test.
func mustFind(t *testing.T, objs []unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	o := find(objs, kind, name)
	if o == nil {
		t.Fatalf("no %s %s among %s", kind, name, names(objs))
	}
	return o
}

// names lists objs as kind/name.
func names(objs []unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetName())
	}
	return out
}
