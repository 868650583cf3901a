package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/finalbackup"
)

// EchoFinalBackupReconciler takes the backup an Echo asks for before it is
// deleted. The release's uninstall gate keeps the Echo, and everything it
// made, until that backup completes; both follow the Echo's spec as it was
// when it was deleted (see internal/finalbackup).
type EchoFinalBackupReconciler struct {
	client.Client
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=echo.dev,resources=echoes,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups,verbs=get;list;watch;create

// Reconcile runs the final backup of an Echo being deleted whose spec
// wants one, and removes the finalizer earlier versions of the operator
// held the Echo with once it is no longer needed.
func (r *EchoFinalBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, req.NamespacedName, echo); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !echo.DeletionTimestamp.IsZero() && finalbackup.Wanted(echo) {
		result, done, err := r.reconcileDelete(ctx, echo)
		if err != nil || !done {
			return result, err
		}
	}
	return ctrl.Result{}, ensureFinalizer(ctx, r.Client, echo, echov1alpha1.FinalBackupFinalizer, false)
}

// reconcileDelete starts the final backup and says whether it has
// completed. A failed backup keeps the Echo: deleting it would lose the
// data the backup was asked to keep; so does an EchoBackup of the final
// backup's name that is not the Echo's final backup (finalbackup.Foreign),
// looked at again every foreignFinalBackupRetry: without the label, its
// deletion does not come here.
func (r *EchoFinalBackupReconciler) reconcileDelete(ctx context.Context, echo *echov1alpha1.Echo) (ctrl.Result, bool, error) {
	b, err := r.ensureFinalBackup(ctx, echo)
	switch {
	case err != nil:
		return ctrl.Result{}, false, err
	case b == nil:
		// One of its name exists that the cache does not show yet.
		return ctrl.Result{RequeueAfter: time.Second}, false, nil
	}
	if why := finalbackup.Foreign(b, echo); why != "" {
		r.Recorder.Eventf(echo, corev1.EventTypeWarning, echov1alpha1.EventReasonFinalBackupFailed,
			"EchoBackup %s has the name of this Echo's final backup but is not one (%s): the Echo is kept. Delete that EchoBackup "+
				"so that the final backup can run, or set spec.backup.beforeDelete.enabled=false to delete without it", b.Name, why)
		return ctrl.Result{RequeueAfter: foreignFinalBackupRetry}, false, nil
	}
	switch {
	case finalbackup.Done(b, echo):
		r.Recorder.Eventf(echo, corev1.EventTypeNormal, echov1alpha1.EventReasonFinalBackupCompleted,
			"Final backup %s completed; deleting the Echo", b.Name)
		return ctrl.Result{}, true, nil
	case meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionFailed):
		r.Recorder.Eventf(echo, corev1.EventTypeWarning, echov1alpha1.EventReasonFinalBackupFailed,
			"Final backup %s failed (%s): the Echo is kept. Fix the cause and delete the EchoBackup to try again, "+
				"or set spec.backup.beforeDelete.enabled=false to delete without it", b.Name, b.Status.Error)
	}
	return ctrl.Result{}, false, nil
}

// foreignFinalBackupRetry is how often an Echo whose final backup's name
// is taken looks again.
const foreignFinalBackupRetry = time.Minute

// ensureFinalBackup returns the EchoBackup of the final backup's name,
// creating the Echo's final backup first; nil when one of that name exists
// that the cache does not show yet. It is not owned by the Echo, so it
// outlives it.
func (r *EchoFinalBackupReconciler) ensureFinalBackup(ctx context.Context, echo *echov1alpha1.Echo) (*echov1alpha1.EchoBackup, error) {
	policy := echo.Spec.Backup.BeforeDelete
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: echo.Namespace,
			Name:      finalbackup.Name(echo),
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
	if err := r.Create(ctx, b); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("creating final backup %s: %w", b.Name, err)
	}
	r.Recorder.Eventf(echo, corev1.EventTypeNormal, echov1alpha1.EventReasonFinalBackupStarted,
		"Started final backup %s; the Echo is deleted once it completes", b.Name)
	return b, nil
}

// finalBackupRelevant lets through the changes of an Echo this controller
// acts on: its spec (the policy) and its deletion. The status writes and
// release updates of a rollout, several per Echo, are none of its business.
var finalBackupRelevant = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return true
	}
	return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
		e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
}}

// SetupWithManager registers the controller; a final backup's progress
// reaches its Echo through the final backup label.
func (r *EchoFinalBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("echo-finalbackup").
		WithOptions(controllerOptions(1)).
		For(&echov1alpha1.Echo{}, builder.WithPredicates(finalBackupRelevant)).
		Watches(&echov1alpha1.EchoBackup{}, handler.EnqueueRequestsFromMapFunc(finalbackup.EchoOf)).
		Complete(r)
}
