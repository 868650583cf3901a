package helmreconciler

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/echo-operator/echo-operator/internal/chart"
)

func TestChartObjectChanged(t *testing.T) {
	deployment := func() *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{chart.NameLabel: chart.Name}, ResourceVersion: "1"},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		}
	}
	service := func() *corev1.Service {
		return &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", ResourceVersion: "1"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		}
	}
	tests := []struct {
		name   string
		old    client.Object
		change func(client.Object)
		want   bool
	}{
		{"status only", deployment(), func(o client.Object) {
			o.(*appsv1.Deployment).Status.AvailableReplicas = 1
			o.SetResourceVersion("2")
		}, false},
		{"spec", deployment(), func(o client.Object) { o.(*appsv1.Deployment).Spec.Replicas = ptr.To[int32](3) }, true},
		{"a label removed", deployment(), func(o client.Object) { o.SetLabels(nil) }, true},
		{"an annotation added", deployment(), func(o client.Object) { o.SetAnnotations(map[string]string{"a": "b"}) }, true},
		{"owner references", deployment(), func(o client.Object) {
			o.SetOwnerReferences([]metav1.OwnerReference{{Name: "x"}})
		}, true},
		{"a Service port edited", service(), func(o client.Object) { o.(*corev1.Service).Spec.Ports[0].Port = 9999 }, true},
		{"a Service's load balancer status", service(), func(o client.Object) {
			o.(*corev1.Service).Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}
		}, false},
	}
	p := chartObjectChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := tt.old.DeepCopyObject().(client.Object)
			tt.change(cur)
			if got := p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: cur}); got != tt.want {
				t.Errorf("update passed = %v, want %v", got, tt.want)
			}
		})
	}

	if p.Create(event.CreateEvent{Object: deployment()}) {
		t.Error("a creation starts a reconcile")
	}
	if !p.Delete(event.DeleteEvent{Object: deployment()}) {
		t.Error("a deletion does not start a reconcile")
	}
}
