package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// EchoFinalBackupReconciler takes the backup an Echo asks for before it is
// deleted. Its finalizer keeps the Echo, and through the release's
// uninstall gate everything the Echo made, until that backup completes.
type EchoFinalBackupReconciler struct {
	client.Client
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=echo.dev,resources=echoes,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups,verbs=get;list;watch;create

// Reconcile keeps the finalizer in line with the Echo's policy and, on
// deletion, runs the final backup before letting the Echo go.
func (r *EchoFinalBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, req.NamespacedName, echo); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	wanted := finalBackupWanted(echo)
	if echo.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, ensureFinalizer(ctx, r.Client, echo, echov1alpha1.FinalBackupFinalizer, wanted)
	}
	if !controllerutil.ContainsFinalizer(echo, echov1alpha1.FinalBackupFinalizer) {
		return ctrl.Result{}, nil
	}
	if !wanted {
		log.FromContext(ctx).Info("Final backup given up: deleting without it")
		return ctrl.Result{}, ensureFinalizer(ctx, r.Client, echo, echov1alpha1.FinalBackupFinalizer, false)
	}
	return ctrl.Result{}, r.reconcileDelete(ctx, echo)
}

// reconcileDelete starts the final backup and releases the Echo once it
// has completed. A failed backup keeps the Echo: deleting it would lose
// the data the backup was asked to keep.
func (r *EchoFinalBackupReconciler) reconcileDelete(ctx context.Context, echo *echov1alpha1.Echo) error {
	b, err := r.ensureFinalBackup(ctx, echo)
	if err != nil {
		return err
	}
	switch {
	case meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete):
		r.Recorder.Eventf(echo, corev1.EventTypeNormal, echov1alpha1.EventReasonFinalBackupCompleted,
			"Final backup %s completed; deleting the Echo", b.Name)
		return ensureFinalizer(ctx, r.Client, echo, echov1alpha1.FinalBackupFinalizer, false)
	case meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionFailed):
		r.Recorder.Eventf(echo, corev1.EventTypeWarning, echov1alpha1.EventReasonFinalBackupFailed,
			"Final backup %s failed (%s): the Echo is kept. Fix the cause and delete the EchoBackup to try again, "+
				"or set spec.backup.beforeDelete.enabled=false to delete without it", b.Name, b.Status.Error)
	}
	return nil
}

// ensureFinalBackup returns the Echo's final backup, creating it first.
// It is not owned by the Echo, so it outlives it.
func (r *EchoFinalBackupReconciler) ensureFinalBackup(ctx context.Context, echo *echov1alpha1.Echo) (*echov1alpha1.EchoBackup, error) {
	policy := echo.Spec.Backup.BeforeDelete
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: echo.Namespace,
			Name:      finalBackupName(echo),
			Labels:    map[string]string{echov1alpha1.FinalBackupOfLabel: echo.Name},
		},
		Spec: echov1alpha1.EchoBackupSpec{
			EchoName:       echo.Name,
			Storage:        *policy.Storage,
			Compression:    policy.Compression,
			DeletionPolicy: echov1alpha1.DeletionPolicyRetain,
		},
	}
	err := r.Get(ctx, client.ObjectKeyFromObject(b), b)
	if err == nil {
		return b, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading final backup %s: %w", b.Name, err)
	}
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating final backup %s: %w", b.Name, err)
	}
	r.Recorder.Eventf(echo, corev1.EventTypeNormal, echov1alpha1.EventReasonFinalBackupStarted,
		"Started final backup %s; the Echo is deleted once it completes", b.Name)
	return b, nil
}

// finalBackupRelevant lets through the changes of an Echo this controller
// acts on: its spec (the policy), its deletion and its finalizer. The
// status writes and release updates of a rollout, several per Echo, are
// none of its business.
var finalBackupRelevant = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return true
	}
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero() ||
		controllerutil.ContainsFinalizer(e.ObjectOld, echov1alpha1.FinalBackupFinalizer) !=
			controllerutil.ContainsFinalizer(e.ObjectNew, echov1alpha1.FinalBackupFinalizer)
}}

func finalBackupWanted(echo *echov1alpha1.Echo) bool {
	return echo.Spec.Backup != nil && echo.Spec.Backup.BeforeDelete != nil &&
		echo.Spec.Backup.BeforeDelete.Enabled && echo.Spec.Backup.BeforeDelete.Storage != nil
}

// finalBackupName is unique to one Echo object: a later Echo of the same
// name gets its own final backup.
func finalBackupName(echo *echov1alpha1.Echo) string {
	uid := string(echo.UID)
	if len(uid) > 8 {
		uid = uid[:8]
	}
	return childName(echo.Name, "final-"+uid)
}

// SetupWithManager registers the controller; a final backup's progress
// reaches its Echo through the final backup label.
func (r *EchoFinalBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("echo-finalbackup").
		WithOptions(controllerOptions(1)).
		For(&echov1alpha1.Echo{}, builder.WithPredicates(finalBackupRelevant)).
		Watches(&echov1alpha1.EchoBackup{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name, ok := o.GetLabels()[echov1alpha1.FinalBackupOfLabel]
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Complete(r)
}
