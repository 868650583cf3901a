package helmreconciler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chartvalues"
)

func translate(t testing.TB, spec echov1alpha1.EchoSpec) map[string]any {
	t.Helper()
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Generation: 7}, Spec: spec}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(echo)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := EchoTranslator{DefaultImage: "example.test/echo:default"}.Translate(context.Background(), &unstructured.Unstructured{Object: raw})
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

func lookup(t *testing.T, vals map[string]any, path ...string) any {
	t.Helper()
	v, found, err := unstructured.NestedFieldNoCopy(vals, path...)
	if err != nil || !found {
		t.Fatalf("value %v not found (err %v) in %v", path, err, vals)
	}
	return v
}

func TestEchoTranslator(t *testing.T) {
	cases := []struct {
		name string
		spec echov1alpha1.EchoSpec
		path []string
		want any
	}{
		{"default image", echov1alpha1.EchoSpec{}, []string{"image"}, "example.test/echo:default"},
		{"own image", echov1alpha1.EchoSpec{Image: "example.test/echo@sha256:abc"}, []string{"image"}, "example.test/echo@sha256:abc"},
		{"default replicas", echov1alpha1.EchoSpec{}, []string{"replicas"}, int64(1)},
		{"replicas", echov1alpha1.EchoSpec{Replicas: ptr.To[int32](0)}, []string{"replicas"}, int64(0)},
		{"spec generation", echov1alpha1.EchoSpec{}, []string{"specGeneration"}, int64(7)},
		{"default port", echov1alpha1.EchoSpec{}, []string{"port"}, int64(8080)},
		{"default service", echov1alpha1.EchoSpec{}, []string{"service", "type"}, "ClusterIP"},
		{"service port", echov1alpha1.EchoSpec{Service: echov1alpha1.ServiceSpec{Port: 8000}}, []string{"service", "port"}, int64(8000)},
		{"default limits", echov1alpha1.EchoSpec{}, []string{"resources", "limits", "memory"}, "64Mi"},
		{"own requests", echov1alpha1.EchoSpec{Resources: &echov1alpha1.ResourceRequirements{
			Requests: map[corev1.ResourceName]echov1alpha1.BoundedQuantity{corev1.ResourceCPU: echov1alpha1.MustBoundedQuantity("1")}}}, []string{"resources", "requests", "cpu"}, "1"},
		{"HA", echov1alpha1.EchoSpec{HighAvailability: &echov1alpha1.HighAvailabilitySpec{Enabled: true}}, []string{"highAvailability", "enabled"}, true},
		{"autoscaling defaults", echov1alpha1.EchoSpec{Autoscaling: &echov1alpha1.AutoscalingSpec{Enabled: true}}, []string{"autoscaling", "maxReplicas"}, int64(5)},
		{"persistence size", echov1alpha1.EchoSpec{Persistence: &echov1alpha1.PersistenceSpec{Enabled: true, Size: ptr.To(echov1alpha1.MustBoundedQuantity("3Gi"))}},
			[]string{"persistence", "size"}, "3Gi"},
		{"persistence default size", echov1alpha1.EchoSpec{Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}}, []string{"persistence", "size"}, "1Gi"},
		{"storage class", echov1alpha1.EchoSpec{Persistence: &echov1alpha1.PersistenceSpec{StorageClassName: ptr.To("fast")}},
			[]string{"persistence", "storageClassName"}, "fast"},
		{"ingress", echov1alpha1.EchoSpec{Ingress: &echov1alpha1.IngressSpec{Enabled: true, Host: "a.example.test"}}, []string{"ingress", "host"}, "a.example.test"},
		{"no ingress", echov1alpha1.EchoSpec{}, []string{"ingress", "enabled"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := lookup(t, translate(t, tc.spec), tc.path...)
			if got != tc.want {
				t.Errorf("%v = %#v, want %#v", tc.path, got, tc.want)
			}
		})
	}

	t.Run("requests without limits send no limits", func(t *testing.T) {
		vals := translate(t, echov1alpha1.EchoSpec{Resources: &echov1alpha1.ResourceRequirements{
			Requests: map[corev1.ResourceName]echov1alpha1.BoundedQuantity{corev1.ResourceCPU: echov1alpha1.MustBoundedQuantity("1")}}})
		if _, found, _ := unstructured.NestedFieldNoCopy(vals, "resources", "limits"); found {
			t.Error("limits reached the chart")
		}
	})
	t.Run("a restore quiesces the release", func(t *testing.T) {
		for annotations, want := range map[string]bool{"": false, "r1": true} {
			echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}}
			if annotations != "" {
				echo.Annotations = map[string]string{echov1alpha1.RestoreAnnotation: annotations}
			}
			if got := chartvalues.FromEcho(echo, "").Quiesced; got != want {
				t.Errorf("restore %q: quiesced = %v, want %v", annotations, got, want)
			}
		}
	})
	t.Run("same Echo, same values", func(t *testing.T) {
		spec := echov1alpha1.EchoSpec{NodeSelector: map[string]echov1alpha1.LabelValue{"a": "b"}, PodAnnotations: map[string]string{"x": "y"}}
		a, b := translate(t, spec), translate(t, spec)
		if !contains(a, b) || !contains(b, a) {
			t.Error("translating the same Echo twice gave different values")
		}
	})
}
