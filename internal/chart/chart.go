package chart

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// KubeVersion is the Kubernetes version the chart is rendered for. It has to
// satisfy the chart's kubeVersion constraint (>=1.27.0-0).
const KubeVersion = "v1.35.0"

// Load loads the chart from a directory (or a packaged .tgz archive).
func Load(dir string) (*chart.Chart, error) {
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	return ch, nil
}

// Render renders the chart offline as a client-only, dry-run install of
// release releaseName in namespace and returns the manifests as unstructured
// objects sorted by kind, then name. values are merged over the chart's
// values.yaml and validated against values.schema.json; a schema violation,
// a template failure or an unsatisfied kubeVersion is returned as an error.
func Render(ch *chart.Chart, releaseName, namespace string, values map[string]any) ([]unstructured.Unstructured, error) {
	rel, err := install(ch, releaseName, namespace, values)
	if err != nil {
		return nil, err
	}
	return decode(rel.Manifest)
}

// RenderNotes renders the chart like Render and returns the text of
// templates/NOTES.txt.
func RenderNotes(ch *chart.Chart, releaseName, namespace string, values map[string]any) (string, error) {
	rel, err := install(ch, releaseName, namespace, values)
	if err != nil {
		return "", err
	}
	return rel.Info.Notes, nil
}

func install(ch *chart.Chart, releaseName, namespace string, values map[string]any) (*release.Release, error) {
	if ch == nil {
		return nil, errors.New("chart is nil")
	}
	kubeVersion, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.DryRun = true
	inst.DryRunOption = "client"
	inst.ClientOnly = true
	inst.KubeVersion = kubeVersion
	inst.ReleaseName = releaseName
	inst.Namespace = namespace
	if values == nil {
		values = map[string]any{}
	}
	rel, err := inst.Run(ch, values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s for release %s/%s: %w", ch.Name(), namespace, releaseName, err)
	}
	if len(rel.Hooks) > 0 {
		return nil, fmt.Errorf("chart %s renders %d hooks; the operator does not expect any", ch.Name(), len(rel.Hooks))
	}
	return rel, nil
}

// decode splits a multi-document manifest into unstructured objects, skipping
// empty documents, and sorts them by kind, then name.
func decode(manifest string) ([]unstructured.Unstructured, error) {
	var objs []unstructured.Unstructured
	reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading manifest: %w", err)
		}
		jsonDoc, err := utilyaml.ToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("converting manifest document to JSON: %w\n%s", err, doc)
		}
		if trimmed := bytes.TrimSpace(jsonDoc); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
			continue
		}
		var obj unstructured.Unstructured
		if err := obj.UnmarshalJSON(jsonDoc); err != nil {
			return nil, fmt.Errorf("decoding manifest document: %w\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
	slices.SortStableFunc(objs, func(a, b unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetKind(), b.GetKind()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return objs, nil
}
