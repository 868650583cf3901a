package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// EchoBackupScheduleReconciler starts an EchoBackup at every run time of a
// schedule, and on request (BackupNowAnnotation), and prunes the ones its
// retention no longer keeps.
//
// Backups are not owned by their schedule: deleting a schedule stops new
// backups and keeps the history it made.
type EchoBackupScheduleReconciler struct {
	client.Client
	Recorder record.EventRecorder
	// Clock tells the schedules the time; nil is the wall clock.
	Clock Clock
}

// +kubebuilder:rbac:groups=echo.dev,resources=echobackupschedules,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackupschedules/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=echo.dev,resources=echorestores,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=echo.dev,resources=echoes,verbs=get;list;watch;delete

// Reconcile runs the schedule up to now and prunes old backups.
func (r *EchoBackupScheduleReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &echov1alpha1.EchoBackupSchedule{}
	if err := r.Get(ctx, req.NamespacedName, s); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if err := r.ensureRequestedBackup(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	orig := s.DeepCopy()
	result, err := r.reconcileSchedule(ctx, s)
	if err == nil || errors.Is(err, reconcile.TerminalError(nil)) {
		testResult, testErr := r.reconcileRestoreTest(ctx, s)
		result, err = earliest(result, testResult), cmp.Or(testErr, err)
	}
	s.Status.ObservedGeneration = s.Generation
	if patchErr := patchStatusIfChanged(ctx, r.Client, "EchoBackupSchedule", orig, s, orig.Status, s.Status); patchErr != nil {
		return ctrl.Result{}, patchErr
	}
	return result, err
}

func (r *EchoBackupScheduleReconciler) reconcileSchedule(ctx context.Context, s *echov1alpha1.EchoBackupSchedule) (ctrl.Result, error) {
	sched, err := parseSchedule(s.Spec.Schedule, s.Spec.TimeZone)
	if err != nil {
		setCondition(&s.Status.Conditions, s.Generation, echov1alpha1.ScheduleConditionReady, metav1.ConditionFalse,
			echov1alpha1.ScheduleReasonInvalidSchedule, err.Error()+": fix spec.schedule or spec.timeZone")
		s.Status.NextScheduleTime = nil
		r.Recorder.Event(s, corev1.EventTypeWarning, echov1alpha1.EventReasonInvalidSchedule, err.Error())
		return ctrl.Result{}, reconcile.TerminalError(err)
	}

	now := r.Clock.Now()
	if err := r.ensureDueBackup(ctx, s, sched, now); err != nil {
		return ctrl.Result{}, err
	}
	backups, err := r.backupsOf(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	recordLastSuccess(s, backups)
	if err := r.pruneBackups(ctx, s, backups, now); err != nil {
		return ctrl.Result{}, err
	}

	next := sched.Next(now)
	if s.Spec.Suspend {
		s.Status.NextScheduleTime = nil
		setCondition(&s.Status.Conditions, s.Generation, echov1alpha1.ScheduleConditionReady, metav1.ConditionFalse,
			echov1alpha1.ScheduleReasonSuspended, "The schedule is suspended: no new backup starts")
		return ctrl.Result{}, nil
	}
	s.Status.NextScheduleTime = ptrTime(next)
	setCondition(&s.Status.Conditions, s.Generation, echov1alpha1.ScheduleConditionReady, metav1.ConditionTrue,
		echov1alpha1.ScheduleReasonScheduled, "Next backup at "+next.UTC().Format(time.RFC3339))
	return ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}, nil
}

// ensureDueBackup starts the backup of the latest run time that has come
// since the last one, unless the schedule is suspended.
func (r *EchoBackupScheduleReconciler) ensureDueBackup(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, sched cron.Schedule, now time.Time) error {
	since := s.CreationTimestamp.Time
	if last := s.Status.LastScheduleTime; last != nil {
		since = last.Time
	}
	due, ok := lastDueTime(sched, since, now)
	if !ok || s.Spec.Suspend {
		return nil
	}
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.Namespace,
			Name:        scheduledBackupName(s.Name, due),
			Labels:      map[string]string{echov1alpha1.ScheduleLabel: s.Name},
			Annotations: map[string]string{echov1alpha1.ScheduledAtAnnotation: due.UTC().Format(time.RFC3339)},
		},
		Spec: s.Spec.Template,
	}
	if err := r.Create(ctx, b); err != nil && !apierrors.IsAlreadyExists(err) {
		r.backupNotStarted(s, b.Name, due, err)
		return fmt.Errorf("creating EchoBackup %s: %w", b.Name, err)
	}
	s.Status.LastScheduleTime = ptrTime(due)
	log.FromContext(ctx).Info("Started scheduled backup", "backup", b.Name, "scheduledAt", due)
	r.Recorder.Eventf(s, corev1.EventTypeNormal, echov1alpha1.EventReasonScheduledBackup, "Started EchoBackup %s for %s", b.Name, due.UTC().Format(time.RFC3339))
	return nil
}

// ensureRequestedBackup honours a request for a backup now
// (BackupNowAnnotation): it starts one EchoBackup from the template, then
// removes the annotation. The backup's name hashes the request with the
// schedule's resourceVersion, which only the removal changes, so a
// reconcile that runs again after a crash between the two finds the
// backup it started rather than starting another; a request made again
// later is a new one.
func (r *EchoBackupScheduleReconciler) ensureRequestedBackup(ctx context.Context, s *echov1alpha1.EchoBackupSchedule) error {
	request, ok := s.Annotations[echov1alpha1.BackupNowAnnotation]
	if !ok {
		return nil
	}
	now := r.Clock.Now()
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   s.Namespace,
			Name:        requestedBackupName(s.Name, request, s.ResourceVersion),
			Labels:      map[string]string{echov1alpha1.ScheduleLabel: s.Name},
			Annotations: map[string]string{echov1alpha1.ScheduledAtAnnotation: now.UTC().Format(time.RFC3339)},
		},
		Spec: s.Spec.Template,
	}
	err := r.Create(ctx, b)
	switch {
	case err == nil:
		log.FromContext(ctx).Info("Started requested backup", "backup", b.Name)
		r.Recorder.Eventf(s, corev1.EventTypeNormal, echov1alpha1.EventReasonBackupRequested,
			"Started EchoBackup %s as annotation %s asked", b.Name, echov1alpha1.BackupNowAnnotation)
	case apierrors.IsAlreadyExists(err):
	default:
		r.backupNotStarted(s, b.Name, now, err)
		return fmt.Errorf("creating EchoBackup %s: %w", b.Name, err)
	}
	orig := s.DeepCopy()
	delete(s.Annotations, echov1alpha1.BackupNowAnnotation)
	if err := r.Patch(ctx, s, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing annotation %s: %w", echov1alpha1.BackupNowAnnotation, err)
	}
	return nil
}

// backupNotStarted reports a due backup the API server refused to create:
// the schedule retries it, and says what stops it.
func (r *EchoBackupScheduleReconciler) backupNotStarted(s *echov1alpha1.EchoBackupSchedule, name string, due time.Time, err error) {
	message := fmt.Sprintf("Could not create EchoBackup %s for %s: %v; fix what refuses it (a ResourceQuota on echobackups, an admission policy), the schedule retries",
		name, due.UTC().Format(time.RFC3339), err)
	setCondition(&s.Status.Conditions, s.Generation, echov1alpha1.ScheduleConditionReady, metav1.ConditionFalse,
		echov1alpha1.ScheduleReasonBackupNotStarted, truncateMessage(message))
	r.Recorder.Event(s, corev1.EventTypeWarning, echov1alpha1.EventReasonBackupNotStarted, truncateMessage(message))
}

func (r *EchoBackupScheduleReconciler) backupsOf(ctx context.Context, s *echov1alpha1.EchoBackupSchedule) ([]echov1alpha1.EchoBackup, error) {
	list := &echov1alpha1.EchoBackupList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{echov1alpha1.ScheduleLabel: s.Name}); err != nil {
		return nil, fmt.Errorf("listing the backups of schedule %s: %w", s.Name, err)
	}
	return list.Items, nil
}

// recordLastSuccess reports the completed backup of the latest run time;
// once every backup is gone the last report stays.
func recordLastSuccess(s *echov1alpha1.EchoBackupSchedule, backups []echov1alpha1.EchoBackup) {
	sorted := slices.Clone(backups)
	sortNewestFirst(sorted)
	for _, b := range sorted {
		if backupSucceeded(b) && b.Status.CompletionTime != nil {
			s.Status.LastSuccessfulBackup, s.Status.LastSuccessfulTime = b.Name, b.Status.CompletionTime
			return
		}
	}
}

// pruneBackups deletes the backups no location's retention keeps any
// more, their artifacts following their deletion policy, and asks for
// the artifact of the others to be deleted where retention no longer
// keeps it (planRetention).
func (r *EchoBackupScheduleReconciler) pruneBackups(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, backups []echov1alpha1.EchoBackup, now time.Time) error {
	plan := planRetention(backups, &s.Spec, now)
	for _, b := range plan.remove {
		if err := r.Delete(ctx, &b); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("pruning EchoBackup %s: %w", b.Name, err)
		}
		r.Recorder.Eventf(s, corev1.EventTypeNormal, echov1alpha1.EventReasonPrunedBackup, "Pruned EchoBackup %s under the retention policy", b.Name)
	}
	for i := range backups {
		if locations, ok := plan.prune[backups[i].Name]; ok {
			if err := r.ensurePruneRequested(ctx, s, &backups[i], locations); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensurePruneRequested lists locations in the backup's PruneAnnotation,
// for the EchoBackup controller to delete its artifact there. The patch
// is made on the resourceVersion read: a backup changed meanwhile is
// planned again on its next event.
func (r *EchoBackupScheduleReconciler) ensurePruneRequested(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, b *echov1alpha1.EchoBackup, locations []string) error {
	value, changed := withPruned(b, locations)
	if !changed {
		return nil
	}
	orig := b.DeepCopy()
	if b.Annotations == nil {
		b.Annotations = map[string]string{}
	}
	b.Annotations[echov1alpha1.PruneAnnotation] = value
	if err := r.Patch(ctx, b, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("pruning EchoBackup %s at %s: %w", b.Name, value, err)
	}
	log.FromContext(ctx).Info("Pruning a backup at some of its locations", "backup", b.Name, "locations", value)
	r.Recorder.Eventf(s, corev1.EventTypeNormal, echov1alpha1.EventReasonPrunedBackup,
		"Pruning EchoBackup %s at %s under the retention policy; its other locations keep it", b.Name, value)
	return nil
}

// SetupWithManager registers the controller; a backup's changes reach its
// schedule through the schedule label, those of a restore test's
// EchoRestore through its owner and those of its scratch Echo through the
// RestoreTestOfLabel.
func (r *EchoBackupScheduleReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("echobackupschedule").
		WithOptions(controllerOptions(1)).
		For(&echov1alpha1.EchoBackupSchedule{}).
		Owns(&echov1alpha1.EchoRestore{}).
		Watches(&echov1alpha1.EchoBackup{}, handler.EnqueueRequestsFromMapFunc(scheduleByLabel(echov1alpha1.ScheduleLabel))).
		Watches(&echov1alpha1.Echo{}, handler.EnqueueRequestsFromMapFunc(r.schedulesOfScratchEcho)).
		Complete(r)
}

// schedulesOfScratchEcho maps an Echo to the schedules whose scratch Echo
// it is or whose name it takes: the one its RestoreTestOfLabel names, and
// those of its namespace whose restore tests use its name.
func (r *EchoBackupScheduleReconciler) schedulesOfScratchEcho(ctx context.Context, o client.Object) []reconcile.Request {
	reqs := scheduleByLabel(echov1alpha1.RestoreTestOfLabel)(ctx, o)
	if !strings.HasSuffix(o.GetName(), "-"+scratchEchoSuffix) {
		return reqs
	}
	list := &echov1alpha1.EchoBackupScheduleList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "Listing the schedules of a scratch Echo name", "echo", o.GetName())
		return reqs
	}
	for _, s := range list.Items {
		if s.Spec.RestoreTest != nil && scratchEchoName(s.Spec.Template.EchoName) == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&s)})
		}
	}
	return reqs
}

// scheduleByLabel maps an object to the schedule its label names.
func scheduleByLabel(label string) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		name, ok := o.GetLabels()[label]
		if !ok || name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: name}}}
	}
}
