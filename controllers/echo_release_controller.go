package controllers

import (
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/echo-operator/echo-operator/internal/helmreconciler"
)

// EchoReleaseReconciler renders every Echo's Helm release ("echo-controller"):
// one Helm release reconciler per entry of watches.yaml, each with its
// chart, built by the library of internal/helmreconciler.
type EchoReleaseReconciler struct {
	Helm helmreconciler.Options
}

// SetupWithManager registers the Helm release reconcilers with the manager.
func (r *EchoReleaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return helmreconciler.SetupWithManager(mgr, r.Helm)
}
