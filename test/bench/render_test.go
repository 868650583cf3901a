//go:build linux

package main

import (
	"context"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func newTestRenderer(t *testing.T) *chartRenderer {
	t.Helper()
	r, err := newChartRenderer(filepath.Join("..", "..", "helm-charts", "echo"), echoImage)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The floor creates what echo-operator's chart renders for an Echo: a
// Service, then a Deployment carrying the message and the default image.
func TestRender(t *testing.T) {
	r := newTestRenderer(t)
	objs, err := r.render(context.Background(), echoObject("echo-00001", "hi $(X)", 2))
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "Service" || objs[1].GetKind() != "Deployment" {
		t.Fatalf("rendered %d objects, want a Service then a Deployment", len(objs))
	}
	for _, o := range objs {
		if o.GetName() != "echo-00001" {
			t.Errorf("%s named %q", o.GetKind(), o.GetName())
		}
		if _, err := floorResource(o); err != nil {
			t.Error(err)
		}
	}
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[1].Object, d); err != nil {
		t.Fatal(err)
	}
	if got := deploymentMessage(d); got != "hi $$(X)" {
		t.Errorf("message = %q", got)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != echoImage {
		t.Errorf("image = %q", img)
	}
	if gen := d.Annotations["echo.dev/spec-generation"]; gen != "2" {
		t.Errorf("spec generation annotation = %q", gen)
	}
}

// The stock operator's CR carries echo-operator's values as they are.
func TestValues(t *testing.T) {
	r := newTestRenderer(t)
	v, err := r.values(context.Background(), echoObject("e", updatedMessage, 2))
	if err != nil {
		t.Fatal(err)
	}
	if v["message"] != updatedMessage || v["image"] != echoImage || v["replicas"] != int64(echoReplicas) || v["specGeneration"] != int64(2) {
		t.Errorf("values = %v", v)
	}
}
