package chartvalues

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// TestSpecRendersTheSameValues: the spec Values.Spec gives renders into the
// values it came from, whatever the default image, so a rollback to a
// revision's values renders that revision again.
func TestSpecRendersTheSameValues(t *testing.T) {
	size := echov1alpha1.MustBoundedQuantity("5Gi")
	cases := []struct {
		name string
		spec echov1alpha1.EchoSpec
	}{
		{"every default", echov1alpha1.EchoSpec{}},
		{"the usual fields", echov1alpha1.EchoSpec{Replicas: ptr.To[int32](3), Message: "hello", Port: 9090,
			Service: echov1alpha1.ServiceSpec{Type: "NodePort", Port: 8080, Annotations: map[string]string{"a": "b"}}}},
		{"every option", echov1alpha1.EchoSpec{
			Replicas: ptr.To[int32](4), Image: "registry.example.test/echo:2", ImagePullPolicy: corev1.PullAlways,
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
			Resources: &echov1alpha1.ResourceRequirements{
				Requests: map[corev1.ResourceName]echov1alpha1.BoundedQuantity{corev1.ResourceCPU: echov1alpha1.MustBoundedQuantity("50m")}},
			Ingress:          &echov1alpha1.IngressSpec{Enabled: true, ClassName: "nginx", Host: "echo.example.test", TLSSecretName: "tls"},
			HighAvailability: &echov1alpha1.HighAvailabilitySpec{Enabled: true},
			Autoscaling:      &echov1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: 3, MaxReplicas: 9, TargetCPUUtilizationPercentage: 60},
			Persistence: &echov1alpha1.PersistenceSpec{Enabled: true, Size: &size, StorageClassName: ptr.To("fast"),
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}},
			NodeSelector:   map[string]echov1alpha1.LabelValue{"zone": "a"},
			Tolerations:    []echov1alpha1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "echo", Effect: corev1.TaintEffectNoSchedule}},
			Affinity:       &echov1alpha1.Affinity{NodeAffinity: &echov1alpha1.NodeAffinity{}},
			PodAnnotations: map[string]string{"team": "blue"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			meta := metav1.ObjectMeta{Name: "web", Generation: 4}
			want := FromEcho(&echov1alpha1.Echo{ObjectMeta: meta, Spec: tc.spec}, "registry.example.test/echo:default")
			got := FromEcho(&echov1alpha1.Echo{ObjectMeta: meta, Spec: want.Spec()}, "registry.example.test/echo:another-default")
			if !reflect.DeepEqual(normalize(got), normalize(want)) {
				t.Errorf("the spec renders\n%+v\nnot\n%+v", got, want)
			}
		})
	}
}

// normalize makes quantities compare by value, not by how they were parsed.
func normalize(v Values) Values {
	for _, list := range []corev1.ResourceList{v.Resources.Limits, v.Resources.Requests} {
		for name, q := range list {
			list[name] = *resourceOf(q.String())
		}
	}
	return v
}

func resourceOf(s string) *resource.Quantity {
	q := echov1alpha1.MustBoundedQuantity(s).Quantity
	return &q
}
