package controllers

import (
	"cmp"
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/cachetrim"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
)

// StatusFieldOwner is the server-side apply field manager of the status
// fields the Echo controller owns.
const StatusFieldOwner = "echo-operator-status"

// EchoStatusReconciler reports the real readiness of every Echo: it reads the
// Deployment, Service and Ingress the Helm release made and owns the Ready
// condition, the replica counts, the observed generation and the addresses
// in the Echo's status, and, from its backups and schedules, its last
// successful and next scheduled backup (echo_status_backups.go). It never changes
// the children: the Helm release reconciler does that.
type EchoStatusReconciler struct {
	client.Client
	// APIReader reads from the API server what the cache keeps only as a
	// stub (see cachetrim): a Deployment rendered from a large Echo.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// MaxConcurrentReconciles is the number of workers; 0 means 1.
	MaxConcurrentReconciles int
	// ProgressStatusDelay holds back status changes that only report
	// progress (see onlyProgress); 0 means DefaultProgressStatusDelay.
	ProgressStatusDelay time.Duration
	// RolloutStatusDelay holds back the progress of a change on its way
	// (changeOnItsWay); 0 means DefaultRolloutStatusDelay.
	RolloutStatusDelay time.Duration
	Clock              Clock

	pacer *statusPacer
}

// +kubebuilder:rbac:groups=echo.dev,resources=echoes,verbs=get;list;watch
// +kubebuilder:rbac:groups=echo.dev,resources=echoes/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups;echobackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings the workload status of one Echo in line with its children.
func (r *EchoStatusReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, req.NamespacedName, echo); err != nil {
		r.pacer.forget(req.NamespacedName)
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !echo.DeletionTimestamp.IsZero() {
		// The release is being uninstalled; there is no readiness to report.
		r.pacer.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}

	if err := r.ensureBackupSummary(ctx, echo); err != nil {
		return ctrl.Result{}, err
	}
	world, err := r.observe(ctx, echo)
	if err != nil {
		return ctrl.Result{}, err
	}
	now := r.Clock.Now()
	desired := computeWorkloadStatus(echo, world, metav1.NewTime(now))
	current := currentWorkloadStatus(echo)
	if sameWorkloadStatus(current, desired) {
		r.pacer.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if onlyProgress(current, desired) {
		if nothingRendered(world) {
			// The release's first object starts the next reconcile;
			// until it exists there is no progress to report.
			return ctrl.Result{}, nil
		}
		if wait := r.pacer.wait(req.NamespacedName, now, changeOnItsWay(current)); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
	}
	if err := r.ensureStatus(ctx, echo, current, desired); err != nil {
		return ctrl.Result{}, err
	}
	r.pacer.forget(req.NamespacedName)
	return ctrl.Result{}, nil
}

// observe reads the children of an Echo. They carry the Echo's name.
func (r *EchoStatusReconciler) observe(ctx context.Context, echo *echov1alpha1.Echo) (echoWorld, error) {
	var w echoWorld
	key := client.ObjectKeyFromObject(echo)
	var err error
	if w.deployment, err = r.getDeployment(ctx, key); err != nil {
		return w, err
	}
	if w.service, err = getOptional(ctx, r.Client, key, &corev1.Service{}); err != nil {
		return w, err
	}
	if echo.Spec.Ingress != nil && echo.Spec.Ingress.Enabled {
		if w.ingress, err = getOptional(ctx, r.Client, key, &networkingv1.Ingress{}); err != nil {
			return w, err
		}
	}
	records, err := releaserecords.CachedRecords(ctx, r.Client, echo.Namespace, echo.Name)
	if err != nil {
		return w, err
	}
	w.untrustedRecords = untrustedReleaseRecords(records)
	w.deployed = releaserecords.DeployedIn(records, echo.UID)
	return w, nil
}

// getDeployment reads the Echo's Deployment from the cache or, when the
// cache keeps it only as a stub (a large Echo renders one past the bound
// of cachetrim.MaxObjectBytes), from the API server: readiness needs its
// annotations and status, which a stub lacks.
func (r *EchoStatusReconciler) getDeployment(ctx context.Context, key client.ObjectKey) (*appsv1.Deployment, error) {
	d, err := getOptional(ctx, r.Client, key, &appsv1.Deployment{})
	if err != nil || d == nil || !cachetrim.IsStub(d) {
		return d, err
	}
	return getOptional(ctx, r.APIReader, key, &appsv1.Deployment{})
}

// ensureStatus applies the desired workload status over the current one,
// and records an Event when readiness flips.
func (r *EchoStatusReconciler) ensureStatus(ctx context.Context, echo *echov1alpha1.Echo, current, desired workloadStatus) error {
	patch := &unstructured.Unstructured{Object: map[string]any{"status": desired.toApplyMap()}}
	patch.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("Echo"))
	patch.SetName(echo.Name)
	patch.SetNamespace(echo.Namespace)
	if err := r.Status().Patch(ctx, patch, client.Apply, client.FieldOwner(StatusFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying the status of Echo %s/%s: %w", echo.Namespace, echo.Name, err)
	}
	log.FromContext(ctx).V(1).Info("Updated status", "ready", desired.ready.Status, "reason", desired.ready.Reason)

	switch {
	case becameReady(current.ready, desired.ready):
		r.Recorder.Eventf(echo, corev1.EventTypeNormal, echov1alpha1.EventReasonReady, "Generation %d is Ready: %s",
			desired.ready.ObservedGeneration, desired.ready.Message)
	case lostReadiness(current.ready, desired.ready):
		r.Recorder.Event(echo, corev1.EventTypeWarning, echov1alpha1.EventReasonNotReady, desired.ready.Message)
	}
	if desired.releaseRecords.Status == metav1.ConditionFalse && desired.releaseRecords.Message != current.releaseRecords.Message {
		r.Recorder.Event(echo, corev1.EventTypeWarning, echov1alpha1.EventReasonUntrustedReleaseRecords, desired.releaseRecords.Message)
	}
	return nil
}

// becameReady says whether an Echo is Ready now and was not, or was Ready
// for an earlier generation: the one Event of an install or an upgrade.
func becameReady(current, desired metav1.Condition) bool {
	return desired.Status == metav1.ConditionTrue &&
		(current.Status != metav1.ConditionTrue || current.ObservedGeneration != desired.ObservedGeneration)
}

// lostReadiness says whether a Ready Echo is not any more for another
// reason than the rollout of a new generation of its spec: that one is the
// user's change on its way, and the Ready Event of the new generation
// closes it.
func lostReadiness(current, desired metav1.Condition) bool {
	if desired.Status == metav1.ConditionTrue || current.Status != metav1.ConditionTrue {
		return false
	}
	return !progressReasons[desired.Reason] || !newGeneration(current, desired)
}

// sameWorkloadStatus compares two workload statuses, ignoring when the
// conditions last changed.
func sameWorkloadStatus(a, b workloadStatus) bool {
	a.ready.LastTransitionTime, b.ready.LastTransitionTime = metav1.Time{}, metav1.Time{}
	a.releaseRecords.LastTransitionTime, b.releaseRecords.LastTransitionTime = metav1.Time{}, metav1.Time{}
	a.deployed.LastTransitionTime, b.deployed.LastTransitionTime = metav1.Time{}, metav1.Time{}
	return a == b
}

func getOptional[T client.Object](ctx context.Context, c client.Reader, key client.ObjectKey, obj T) (T, error) {
	var zero T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return obj, nil
}

// SetupWithManager registers the controller. Children are mapped to their
// Echo through the owner reference the Helm release puts on them, release
// Secrets (the only Secrets the cache holds) through their release name.
func (r *EchoStatusReconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.pacer = newStatusPacer(cmp.Or(r.ProgressStatusDelay, DefaultProgressStatusDelay), cmp.Or(r.RolloutStatusDelay, DefaultRolloutStatusDelay))
	return ctrl.NewControllerManagedBy(mgr).
		Named("echo-status").
		WithOptions(controllerOptions(r.MaxConcurrentReconciles)).
		For(&echov1alpha1.Echo{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&networkingv1.Ingress{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(releaseRecordToEcho)).
		Watches(&echov1alpha1.EchoBackup{}, handler.EnqueueRequestsFromMapFunc(echoOfBackup)).
		Watches(&echov1alpha1.EchoBackupSchedule{}, handler.EnqueueRequestsFromMapFunc(echoOfSchedule)).
		Complete(r)
}
