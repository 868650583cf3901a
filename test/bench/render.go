//go:build linux

package main

import (
	"context"
	"fmt"
	"path"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/internal/helmreconciler"
)

// Echo is the kind of every benchmark object; echoAPIVersion its group and
// version in echo-operator's API.
const (
	echoKind       = "Echo"
	echoAPIVersion = "echo.dev/v1alpha1"
	// echoReplicas is every Echo's spec.replicas.
	echoReplicas = 1
)

// echoObject is the Echo the benchmark creates for name in the bench
// namespace, as the API server holds it at generation: spec.message and
// spec.replicas set, everything else left to defaults.
func echoObject(name, message string, generation int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": echoAPIVersion,
		"kind":       echoKind,
		"metadata":   map[string]any{"name": name, "namespace": benchNamespace},
		"spec":       map[string]any{"message": message, "replicas": int64(echoReplicas)},
	}}
	u.SetGeneration(generation)
	return u
}

// chartRenderer renders the echo chart the way echo-operator does for an
// Echo: values from echo-operator's own translator, then Helm's engine.
type chartRenderer struct {
	chart      *chart.Chart
	translator helmreconciler.EchoTranslator
}

// newChartRenderer loads the chart directory.
func newChartRenderer(chartDir, defaultImage string) (*chartRenderer, error) {
	c, err := loader.Load(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading the chart %s: %w", chartDir, err)
	}
	return &chartRenderer{chart: c, translator: helmreconciler.EchoTranslator{DefaultImage: defaultImage}}, nil
}

// values are the chart values echo-operator gives the chart for the Echo.
func (r *chartRenderer) values(ctx context.Context, echo *unstructured.Unstructured) (map[string]any, error) {
	v, err := r.translator.Translate(ctx, echo)
	if err != nil {
		return nil, fmt.Errorf("translating Echo %s: %w", echo.GetName(), err)
	}
	return v.AsMap(), nil
}

// render returns the objects of the release of the Echo (named after it, in
// its namespace) in Helm's install order.
func (r *chartRenderer) render(ctx context.Context, echo *unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	vals, err := r.values(ctx, echo)
	if err != nil {
		return nil, err
	}
	opts := chartutil.ReleaseOptions{Name: echo.GetName(), Namespace: echo.GetNamespace(), Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(r.chart, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("chart values of %s: %w", echo.GetName(), err)
	}
	files, err := engine.Render(r.chart, top)
	if err != nil {
		return nil, fmt.Errorf("rendering the chart for %s: %w", echo.GetName(), err)
	}
	for name := range files {
		if path.Base(name) == "NOTES.txt" {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, fmt.Errorf("splitting the manifest of %s: %w", echo.GetName(), err)
	}
	objs := make([]*unstructured.Unstructured, 0, len(manifests))
	for _, m := range manifests {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(m.Content), &u.Object); err != nil {
			return nil, fmt.Errorf("decoding %s of %s: %w", m.Name, echo.GetName(), err)
		}
		if len(u.Object) == 0 {
			continue
		}
		objs = append(objs, u)
	}
	return objs, nil
}
