package helmreconciler

import (
	"reflect"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ChartObjectTypes are the kinds the echo chart renders. The operator
// caches them (selected by chart.ObjectSelector), the Helm reconciler watches
// them to repair drift, and drift repair reads them from the cache.
func ChartObjectTypes() []client.Object {
	return []client.Object{
		&appsv1.Deployment{},
		&corev1.Service{},
		&corev1.PersistentVolumeClaim{},
		&networkingv1.Ingress{},
		&autoscalingv2.HorizontalPodAutoscaler{},
		&policyv1.PodDisruptionBudget{},
	}
}

// chartObjectKinds returns the kinds of ChartObjectTypes.
func chartObjectKinds(mgr ctrl.Manager) (map[schema.GroupVersionKind]bool, error) {
	kinds := map[schema.GroupVersionKind]bool{}
	for _, obj := range ChartObjectTypes() {
		gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
		if err != nil {
			return nil, err
		}
		kinds[gvk] = true
	}
	return kinds, nil
}

// watchChartObjects makes changes to what the chart rendered for an object
// of the owner's kind start a reconcile of its owner.
//
// The stock dependent watches would do the same through unstructured
// informers, a second cache of every Deployment and Service beside the
// typed one the Go controllers read; these share the typed cache.
func watchChartObjects(mgr ctrl.Manager, owner client.Object) reconciler.ControllerSetupFunc {
	return func(c reconciler.ControllerSetup) error {
		for _, obj := range ChartObjectTypes() {
			if err := c.Watch(source.Kind(mgr.GetCache(), obj,
				handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), owner, handler.OnlyControllerOwner()),
				chartObjectChanged(),
			)); err != nil {
				return err
			}
		}
		return nil
	}
}

// chartObjectChanged passes the events that may be drift: a deletion, or
// a change of the metadata or spec. Creations are the release's own, and
// status changes are not rendered.
func chartObjectChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return renderedFieldsChanged(e.ObjectOld, e.ObjectNew)
		},
	}
}

// renderedFieldsChanged compares what a chart can render: labels,
// annotations, owner references and the spec.
func renderedFieldsChanged(old, cur client.Object) bool {
	return !equality.Semantic.DeepEqual(old.GetLabels(), cur.GetLabels()) ||
		!equality.Semantic.DeepEqual(old.GetAnnotations(), cur.GetAnnotations()) ||
		!equality.Semantic.DeepEqual(old.GetOwnerReferences(), cur.GetOwnerReferences()) ||
		!equality.Semantic.DeepEqual(specOf(old), specOf(cur))
}

// specOf returns the spec of a chart object, or the whole object for a
// kind without one.
func specOf(obj client.Object) any {
	v := reflect.ValueOf(obj)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		if spec := v.Elem().FieldByName("Spec"); spec.IsValid() {
			return spec.Interface()
		}
	}
	return obj
}
