package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// locationRefField indexes, for each kind that may refer to an
// EchoBackupLocation, its objects by the location their storage names.
const locationRefField = ".storage.locationRef.name"

// maxUsersNamed bounds the users a location's condition and Event name.
const maxUsersNamed = 5

// EchoBackupLocationReconciler keeps an EchoBackupLocation from going while
// anything of its namespace refers to it (echov1alpha1.LocationFinalizer):
// a location being deleted says what still uses it and goes once nothing
// does.
type EchoBackupLocationReconciler struct {
	client.Client
	Recorder record.EventRecorder
}

// +kubebuilder:rbac:groups=echo.dev,resources=echobackuplocations,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackuplocations/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackuplocations/finalizers,verbs=update

// Reconcile adds the finalizer to a location, or, when the location is
// being deleted, removes it once nothing uses the location.
func (r *EchoBackupLocationReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	loc := &echov1alpha1.EchoBackupLocation{}
	if err := r.Get(ctx, req.NamespacedName, loc); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if loc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, ensureFinalizer(ctx, r.Client, loc, echov1alpha1.LocationFinalizer, true)
	}
	if !controllerutil.ContainsFinalizer(loc, echov1alpha1.LocationFinalizer) {
		return ctrl.Result{}, nil
	}
	users, err := r.usersOf(ctx, loc)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(users) == 0 {
		return ctrl.Result{}, ensureFinalizer(ctx, r.Client, loc, echov1alpha1.LocationFinalizer, false)
	}
	return ctrl.Result{}, r.reportInUse(ctx, loc, users)
}

// usersOf lists, as "Kind name", what refers to the location: EchoBackups,
// EchoBackupSchedules, unfinished EchoRestores and Echoes whose final
// backup goes there.
func (r *EchoBackupLocationReconciler) usersOf(ctx context.Context, loc *echov1alpha1.EchoBackupLocation) ([]string, error) {
	in := []client.ListOption{client.InNamespace(loc.Namespace), client.MatchingFields{locationRefField: loc.Name}}
	var users []string
	backups := &echov1alpha1.EchoBackupList{}
	schedules := &echov1alpha1.EchoBackupScheduleList{}
	restores := &echov1alpha1.EchoRestoreList{}
	echoes := &echov1alpha1.EchoList{}
	for _, list := range []client.ObjectList{backups, schedules, restores, echoes} {
		if err := r.List(ctx, list, in...); err != nil {
			return nil, fmt.Errorf("listing what uses EchoBackupLocation %s: %w", loc.Name, err)
		}
	}
	for _, b := range backups.Items {
		users = append(users, "EchoBackup "+b.Name)
	}
	for _, s := range schedules.Items {
		users = append(users, "EchoBackupSchedule "+s.Name)
	}
	for i := range restores.Items {
		if !restoreFinished(&restores.Items[i]) {
			users = append(users, "EchoRestore "+restores.Items[i].Name)
		}
	}
	for _, e := range echoes.Items {
		users = append(users, "Echo "+e.Name)
	}
	slices.Sort(users)
	return users, nil
}

// reportInUse says, in the Deleting condition and a Warning Event, what
// holds the location's deletion back. Both change only when the users do.
func (r *EchoBackupLocationReconciler) reportInUse(ctx context.Context, loc *echov1alpha1.EchoBackupLocation, users []string) error {
	message := inUseMessage(users)
	if c := meta.FindStatusCondition(loc.Status.Conditions, echov1alpha1.LocationConditionDeleting); c != nil && c.Message == message {
		return nil
	}
	orig := loc.DeepCopy()
	setCondition(&loc.Status.Conditions, loc.Generation, echov1alpha1.LocationConditionDeleting, metav1.ConditionTrue, echov1alpha1.LocationReasonInUse, message)
	if err := patchStatusIfChanged(ctx, r.Client, "EchoBackupLocation", orig, loc, orig.Status, loc.Status); err != nil {
		return err
	}
	r.Recorder.Event(loc, corev1.EventTypeWarning, echov1alpha1.EventReasonLocationInUse, message)
	return nil
}

// inUseMessage names up to maxUsersNamed users and counts the others.
func inUseMessage(users []string) string {
	named := users[:min(len(users), maxUsersNamed)]
	more := ""
	if n := len(users) - len(named); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("The location is deleted once nothing uses it; still used by %s%s: delete them, or let them finish (restores), "+
		"or point them at another location (schedules, Echoes' spec.backup.beforeDelete)", strings.Join(named, ", "), more)
}

// SetupWithManager registers the controller and the indexes of what
// refers to a location; a change to any of those objects maps to the
// location it names.
func (r *EchoBackupLocationReconciler) SetupWithManager(mgr ctrl.Manager) error {
	refs := []struct {
		obj       client.Object
		locations func(client.Object) []string
	}{
		{&echov1alpha1.EchoBackup{}, func(o client.Object) []string { return backupLocations(&o.(*echov1alpha1.EchoBackup).Spec) }},
		{&echov1alpha1.EchoBackupSchedule{}, func(o client.Object) []string {
			return backupLocations(&o.(*echov1alpha1.EchoBackupSchedule).Spec.Template)
		}},
		{&echov1alpha1.EchoRestore{}, func(o client.Object) []string {
			return nonEmpty(o.(*echov1alpha1.EchoRestore).Spec.Source.Storage.LocationName())
		}},
		{&echov1alpha1.Echo{}, func(o client.Object) []string {
			if p := o.(*echov1alpha1.Echo).Spec.Backup; p != nil && p.BeforeDelete != nil {
				return nonEmpty(p.BeforeDelete.Storage.LocationName())
			}
			return nil
		}},
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("echobackuplocation").
		WithOptions(controllerOptions(1)).
		For(&echov1alpha1.EchoBackupLocation{})
	for _, kind := range refs {
		locationOf := kind.locations
		if err := mgr.GetFieldIndexer().IndexField(context.Background(), kind.obj, locationRefField, locationOf); err != nil {
			return fmt.Errorf("indexing %T by location: %w", kind.obj, err)
		}
		b = b.Watches(kind.obj, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			var reqs []reconcile.Request
			for _, name := range locationOf(o) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}})
			}
			return reqs
		}))
	}
	return b.Complete(r)
}

// backupLocations are the EchoBackupLocations a backup's spec names: its
// storage's and its copies', each once.
func backupLocations(spec *echov1alpha1.EchoBackupSpec) []string {
	names := nonEmpty(spec.Storage.LocationName())
	for _, c := range spec.CopyTo {
		if name := c.Storage.LocationName(); name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}
