package helmreconciler

import (
	"fmt"
	"strings"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	sdkhandler "github.com/operator-framework/operator-lib/handler"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/echo-operator/echo-operator/internal/fairqueue"
)

// setupFairController registers r as the Helm reconciler of w's kind, as
// the library's SetupWithManager does, but on a queue that takes the
// namespaces in turn (fairqueue): thousands of Echoes created at once in
// one namespace delay another namespace's new Echo by a turn, not by the
// whole backlog. The library builds its controller with a queue of its
// own choosing, so the controller and the library's two watches (the
// kind, and the release Secrets it controls) are set up here; setups add
// the operator's own watches.
//
// r must have been built with every option whose default the library's
// SetupWithManager would fill in (see echoReconcilerOptions).
func setupFairController(mgr ctrl.Manager, r *reconciler.Reconciler, w watches.Watch, workers int, setups ...reconciler.ControllerSetupFunc) error {
	name := strings.ToLower(w.Kind) + "-controller"
	c, err := controller.New(name, mgr, controller.Options{
		Reconciler:              r,
		MaxConcurrentReconciles: workers,
		NewQueue:                fairqueue.NewControllerQueue,
	})
	if err != nil {
		return err
	}
	preds, err := selectorPredicates(w)
	if err != nil {
		return err
	}
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(w.GroupVersionKind)
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(owner),
		&sdkhandler.InstrumentedEnqueueRequestForObject[client.Object]{}, preds...)); err != nil {
		return fmt.Errorf("watching %s: %w", w.Kind, err)
	}
	if err := c.Watch(source.Kind(mgr.GetCache(), client.Object(&corev1.Secret{}),
		handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), owner, handler.OnlyControllerOwner()),
		preds...)); err != nil {
		return fmt.Errorf("watching the release Secrets of %s: %w", w.Kind, err)
	}
	for _, setup := range setups {
		if err := setup(c); err != nil {
			return err
		}
	}
	return nil
}

// selectorPredicates passes only objects that match w's selector, as the
// library does.
func selectorPredicates(w watches.Watch) ([]predicate.Predicate, error) {
	if w.Selector == nil || len(w.Selector.MatchLabels)+len(w.Selector.MatchExpressions) == 0 {
		return nil, nil
	}
	p, err := predicate.LabelSelectorPredicate(*w.Selector)
	if err != nil {
		return nil, fmt.Errorf("the selector of %s: %w", w.Kind, err)
	}
	return []predicate.Predicate{p}, nil
}
