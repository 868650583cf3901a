package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/names"
)

// Restore tests (spec.restoreTest). At each run time of its own cron
// schedule, the schedule restores its newest completed backup into a
// scratch Echo through an EchoRestore it owns (the restore creates the
// Echo, see echorestore_scratch.go); the test succeeds once the restore
// completes, that is once the mover read the restored data back and found
// it to match the manifest and the scratch Echo is Ready. Its result goes
// into the schedule's status first; then the EchoRestore (and with it its
// Jobs) and the scratch Echo (and with it its claim) are deleted.
//
// Everything is read from the cluster: the test under way is the
// EchoRestore the schedule controls with the RestoreTestOfLabel, its start
// the time recorded on that EchoRestore (RestoreTestStartedAnnotation), its
// deadline that plus the timeout. One
// runs at a time per schedule, and per Echo since the scratch Echo's name
// is the Echo's.

// scratchEchoSuffix ends the name of a restore test's scratch Echo.
const scratchEchoSuffix = "restoretest"

// maxEchoNameLen is the longest Echo name (it names a Helm release).
const maxEchoNameLen = 53

// restoreTestRetry is how soon a restore test that waits (for its scratch
// Echo to go, for another schedule's test) looks again.
const restoreTestRetry = 10 * time.Second

// scratchEchoName is the name of the scratch Echo of the restore tests of
// an Echo's backups: <echo>-restoretest, shortened with a hash to fit an
// Echo name.
func scratchEchoName(echo string) string {
	name := echo + "-" + scratchEchoSuffix
	if len(name) <= maxEchoNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	keep := maxEchoNameLen - len(scratchEchoSuffix) - 8 - 2
	return strings.TrimRight(echo[:keep], "-") + "-" + hex.EncodeToString(sum[:])[:8] + "-" + scratchEchoSuffix
}

// restoreTestName names the EchoRestore of the restore test due at a run
// time; the name being deterministic, a second attempt finds the first.
func restoreTestName(schedule string, at time.Time) string {
	return names.Child(schedule, "restoretest-"+strconv.FormatInt(at.Unix(), 10))
}

// restoreTestTimeout is spec.restoreTest.timeout, or the default.
func restoreTestTimeout(rt *echov1alpha1.RestoreTestSpec) time.Duration {
	if rt == nil || rt.Timeout == nil || rt.Timeout.Duration <= 0 {
		return echov1alpha1.DefaultRestoreTestTimeout
	}
	return rt.Timeout.Duration
}

// reconcileRestoreTest ends the restore test under way once it has an
// outcome, cleans up after one that has, and starts the one due.
func (r *EchoBackupScheduleReconciler) reconcileRestoreTest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule) (ctrl.Result, error) {
	now := r.Clock.Now()
	active, err := r.restoreTestsOf(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	result, running, err := r.endRestoreTests(ctx, s, active, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	busy, wait, err := r.ensureRequestedRestoreTest(ctx, s, active, running, now)
	if err != nil {
		return ctrl.Result{}, err
	}
	running, result = running || busy, earliest(result, wait)
	rt := s.Spec.RestoreTest
	if rt == nil {
		s.Status.NextRestoreTestTime = nil
		meta.RemoveStatusCondition(&s.Status.Conditions, echov1alpha1.ScheduleConditionRestoreTestReady)
		return result, nil
	}
	sched, err := parseSchedule(rt.Schedule, s.Spec.TimeZone)
	if err != nil {
		s.Status.NextRestoreTestTime = nil
		r.restoreTestNotReady(s, echov1alpha1.ScheduleReasonInvalidSchedule, err.Error()+": fix spec.restoreTest.schedule or spec.timeZone")
		r.Recorder.Event(s, corev1.EventTypeWarning, echov1alpha1.EventReasonInvalidSchedule, err.Error())
		return result, nil
	}
	if rt.Suspend {
		s.Status.NextRestoreTestTime = nil
		r.restoreTestNotReady(s, echov1alpha1.ScheduleReasonSuspended, "Restore tests are suspended: no new one starts")
		return result, nil
	}
	if s.Status.LastRestoreTestScheduleTime == nil {
		// Tests start from the first run time after the schedule began
		// testing, also when restoreTest is added to an older schedule.
		s.Status.LastRestoreTestScheduleTime = ptrTime(now)
	}
	if !running {
		wait, err := r.ensureDueRestoreTest(ctx, s, sched, now)
		if err != nil {
			return ctrl.Result{}, err
		}
		result = earliest(result, wait)
	}
	next := sched.Next(now)
	s.Status.NextRestoreTestTime = ptrTime(next)
	if err := r.ensureRestoreTestCondition(ctx, s, next); err != nil {
		return ctrl.Result{}, err
	}
	return earliest(result, ctrl.Result{RequeueAfter: max(next.Sub(now), time.Second)}), nil
}

func (r *EchoBackupScheduleReconciler) restoreTestNotReady(s *echov1alpha1.EchoBackupSchedule, reason, message string) {
	setCondition(&s.Status.Conditions, s.Generation, echov1alpha1.ScheduleConditionRestoreTestReady, metav1.ConditionFalse,
		reason, truncateMessage(message))
}

// restoreTestsOf lists the EchoRestores of the schedule's restore tests:
// those it controls with its label (anyone may set the label).
func (r *EchoBackupScheduleReconciler) restoreTestsOf(ctx context.Context, s *echov1alpha1.EchoBackupSchedule) ([]echov1alpha1.EchoRestore, error) {
	list := &echov1alpha1.EchoRestoreList{}
	if err := r.List(ctx, list, client.InNamespace(s.Namespace), client.MatchingLabels{echov1alpha1.RestoreTestOfLabel: s.Name}); err != nil {
		return nil, fmt.Errorf("listing the restore tests of schedule %s: %w", s.Name, err)
	}
	return slices.DeleteFunc(list.Items, func(rs echov1alpha1.EchoRestore) bool { return !metav1.IsControlledBy(&rs, s) }), nil
}

// endRestoreTests records the outcome of each restore test that has one
// and, once it is recorded, deletes its EchoRestore and scratch Echo. It
// reports whether a test is still running, and when to look at it again.
// The outcome is recorded in a reconcile of its own, before anything is
// deleted: the status patch brings the schedule back to clean up.
func (r *EchoBackupScheduleReconciler) endRestoreTests(ctx context.Context, s *echov1alpha1.EchoBackupSchedule,
	tests []echov1alpha1.EchoRestore, now time.Time) (ctrl.Result, bool, error) {
	var result ctrl.Result
	running := false
	for i := range tests {
		rs := &tests[i]
		if last := s.Status.LastRestoreTest; last != nil && last.Restore == rs.Name {
			if err := r.cleanUpRestoreTest(ctx, s, rs); err != nil {
				return ctrl.Result{}, false, err
			}
			running = true // until its scratch Echo and EchoRestore are gone
			result = earliest(result, ctrl.Result{RequeueAfter: restoreTestRetry})
			continue
		}
		outcome := r.restoreTestOutcome(ctx, s, rs, now)
		if outcome == nil {
			running = true
			deadline := restoreTestStart(rs).Add(restoreTestTimeout(s.Spec.RestoreTest))
			result = earliest(result, ctrl.Result{RequeueAfter: max(deadline.Sub(now), time.Second)})
			continue
		}
		r.recordRestoreTest(ctx, s, outcome)
		running = true
		result = earliest(result, ctrl.Result{RequeueAfter: restoreTestRetry})
	}
	return result, running, nil
}

// restoreTestOutcome is the result of a restore test once it has one: its
// EchoRestore completed (the data read back matched, the scratch Echo is
// Ready) or failed, was deleted, or is past the test's deadline.
func (r *EchoBackupScheduleReconciler) restoreTestOutcome(ctx context.Context, s *echov1alpha1.EchoBackupSchedule,
	rs *echov1alpha1.EchoRestore, now time.Time) *echov1alpha1.RestoreTestResult {
	res := &echov1alpha1.RestoreTestResult{Restore: rs.Name, Backup: rs.Spec.Source.BackupName,
		StartTime: ptrTime(restoreTestStart(rs)), CompletionTime: metav1.NewTime(now)}
	timeout := restoreTestTimeout(s.Spec.RestoreTest)
	if failed := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed); failed != nil && failed.Status == metav1.ConditionTrue {
		res.Outcome, res.Reason = echov1alpha1.RestoreTestFailed, failed.Reason
		res.Message = fmt.Sprintf("Restoring EchoBackup %s into scratch Echo %s failed: %s", res.Backup, rs.Spec.EchoName, failed.Message)
		return finishResult(res, rs)
	}
	if meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete) {
		if ready, why := r.scratchEchoReady(ctx, s, rs.Spec.EchoName); !ready {
			res.Outcome, res.Reason = echov1alpha1.RestoreTestFailed, echov1alpha1.RestoreReasonEchoDeleted
			res.Message = fmt.Sprintf("EchoRestore %s completed but scratch Echo %s is not Ready: %s", rs.Name, rs.Spec.EchoName, why)
			return finishResult(res, rs)
		}
		res.Outcome, res.Reason = echov1alpha1.RestoreTestSucceeded, echov1alpha1.RestoreTestReasonVerified
		restored := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionDataRestored)
		what := "the backup holds no data"
		if restored != nil {
			what = restored.Message
		}
		res.Message = fmt.Sprintf("EchoBackup %s restored into scratch Echo %s, which became Ready: %s", res.Backup, rs.Spec.EchoName, what)
		return finishResult(res, rs)
	}
	if !rs.DeletionTimestamp.IsZero() {
		res.Outcome, res.Reason = echov1alpha1.RestoreTestFailed, echov1alpha1.RestoreTestReasonRestoreDeleted
		res.Message = fmt.Sprintf("EchoRestore %s was deleted before the restore test ended", rs.Name)
		return finishResult(res, rs)
	}
	if now.Before(restoreTestStart(rs).Add(timeout)) {
		return nil
	}
	step := "starting"
	if c := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete); c != nil {
		step = c.Reason + ": " + c.Message
	}
	res.Outcome, res.Reason = echov1alpha1.RestoreTestFailed, echov1alpha1.RestoreTestReasonDeadlineExceeded
	res.Message = fmt.Sprintf("The restore test of EchoBackup %s did not end within spec.restoreTest.timeout (%s); it was at step %s. "+
		"Raise the timeout if the restore needs longer, or see why it is stuck", res.Backup, timeout, step)
	return finishResult(res, rs)
}

// restoreTestStart is when a restore test started: the time its
// schedule recorded on its EchoRestore, or that EchoRestore's creation.
func restoreTestStart(rs *echov1alpha1.EchoRestore) time.Time {
	if at, err := time.Parse(time.RFC3339, rs.Annotations[echov1alpha1.RestoreTestStartedAnnotation]); err == nil {
		return at
	}
	return rs.CreationTimestamp.Time
}

// finishResult fills in the duration, counted from the restore's start.
func finishResult(res *echov1alpha1.RestoreTestResult, rs *echov1alpha1.EchoRestore) *echov1alpha1.RestoreTestResult {
	if rs.Status.CompletionTime != nil && res.Outcome == echov1alpha1.RestoreTestSucceeded {
		res.CompletionTime = *rs.Status.CompletionTime
	}
	res.Message = truncateMessage(res.Message)
	res.Duration = &metav1.Duration{Duration: max(res.CompletionTime.Sub(res.StartTime.Time), 0).Truncate(time.Second)}
	return res
}

// scratchEchoReady reports whether the scratch Echo of a test is Ready,
// and why not.
func (r *EchoBackupScheduleReconciler) scratchEchoReady(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, name string) (bool, string) {
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, echo); err != nil {
		return false, err.Error()
	}
	if !isScratchEchoOf(echo, s.Name) {
		return false, "it is not this schedule's scratch Echo"
	}
	if !meta.IsStatusConditionTrue(echo.Status.Conditions, echov1alpha1.EchoConditionReady) {
		return false, readyMessage(echo)
	}
	return true, ""
}

// recordRestoreTest puts a test's outcome into the schedule's status and
// tells it in an Event.
func (r *EchoBackupScheduleReconciler) recordRestoreTest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, res *echov1alpha1.RestoreTestResult) {
	s.Status.LastRestoreTest = res
	eventType, reason := corev1.EventTypeWarning, echov1alpha1.EventReasonRestoreTestFailed
	switch res.Outcome {
	case echov1alpha1.RestoreTestSucceeded:
		s.Status.LastSuccessfulRestoreTestTime = ptrTime(res.CompletionTime.Time)
		eventType, reason = corev1.EventTypeNormal, echov1alpha1.EventReasonRestoreTestSucceeded
	case echov1alpha1.RestoreTestSkipped:
		reason = echov1alpha1.EventReasonRestoreTestSkipped
	}
	log.FromContext(ctx).Info("Restore test ended", "restore", res.Restore, "backup", res.Backup, "outcome", res.Outcome, "reason", res.Reason)
	r.Recorder.Event(s, eventType, reason, res.Message)
}

// cleanUpRestoreTest deletes the scratch Echo of a recorded test (its
// claim goes with it) and the test's EchoRestore (its Jobs go with it).
// An Echo of the scratch name that is not this schedule's is never
// touched.
func (r *EchoBackupScheduleReconciler) cleanUpRestoreTest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, rs *echov1alpha1.EchoRestore) error {
	if err := r.deleteScratchEcho(ctx, s, rs.Spec.EchoName); err != nil {
		return err
	}
	if !rs.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Delete(ctx, rs, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting EchoRestore %s of a restore test: %w", rs.Name, err)
	}
	return nil
}

// deleteScratchEcho deletes the named Echo when it is this schedule's
// scratch Echo; it reports whether one is still there.
func (r *EchoBackupScheduleReconciler) deleteScratchEcho(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, name string) error {
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, echo); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !isScratchEchoOf(echo, s.Name) || !echo.DeletionTimestamp.IsZero() {
		return nil
	}
	if err := r.Delete(ctx, echo, client.Preconditions{UID: &echo.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting scratch Echo %s: %w", name, err)
	}
	return nil
}

// ensureDueRestoreTest starts the restore test of the latest run time that
// has come since the last one. It waits, without using up the run time,
// while the scratch Echo of an earlier test is still there; it skips the
// run time when there is no completed backup, and fails it when an Echo
// that no restore test created has the scratch name.
func (r *EchoBackupScheduleReconciler) ensureDueRestoreTest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule,
	sched cron.Schedule, now time.Time) (ctrl.Result, error) {
	due, ok := lastDueTime(sched, s.Status.LastRestoreTestScheduleTime.Time, now)
	if !ok {
		return ctrl.Result{}, nil
	}
	wait, err := r.beginRestoreTest(ctx, s, due, now, "")
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case wait:
		return ctrl.Result{RequeueAfter: restoreTestRetry}, nil
	}
	s.Status.LastRestoreTestScheduleTime = ptrTime(due)
	return ctrl.Result{}, nil
}

// ensureRequestedRestoreTest honours a request for a restore test now
// (RestoreTestNowAnnotation): once no test of the schedule is under way it
// begins one, then removes the annotation. The request's value, recorded
// on the test's EchoRestore, makes a reconcile that runs again after a
// crash between the two find the test it started rather than start
// another. It reports busy while the request holds the schedule's tests
// (the cron's test waits), and when to look again.
func (r *EchoBackupScheduleReconciler) ensureRequestedRestoreTest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule,
	tests []echov1alpha1.EchoRestore, running bool, now time.Time) (busy bool, _ ctrl.Result, _ error) {
	request, ok := s.Annotations[echov1alpha1.RestoreTestNowAnnotation]
	if !ok {
		return false, ctrl.Result{}, nil
	}
	for _, rs := range tests {
		if rs.Annotations[echov1alpha1.RestoreTestRequestAnnotation] == request {
			return true, ctrl.Result{}, r.removeRestoreTestRequest(ctx, s)
		}
	}
	if running {
		return false, ctrl.Result{}, nil // the end of the test under way brings the schedule back
	}
	wait, err := r.beginRestoreTest(ctx, s, now, now, request)
	switch {
	case err != nil:
		return true, ctrl.Result{}, err
	case wait:
		return true, ctrl.Result{RequeueAfter: restoreTestRetry}, nil
	}
	return true, ctrl.Result{}, r.removeRestoreTestRequest(ctx, s)
}

// removeRestoreTestRequest removes the RestoreTestNowAnnotation, through a
// copy of the schedule's metadata so that the status being computed stays
// as it is.
func (r *EchoBackupScheduleReconciler) removeRestoreTestRequest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule) error {
	m := &echov1alpha1.EchoBackupSchedule{ObjectMeta: *s.ObjectMeta.DeepCopy()}
	orig := m.DeepCopy()
	delete(m.Annotations, echov1alpha1.RestoreTestNowAnnotation)
	if err := r.Patch(ctx, m, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("removing annotation %s: %w", echov1alpha1.RestoreTestNowAnnotation, err)
	}
	return nil
}

// beginRestoreTest begins the restore test of a run time (for a request,
// the time of the request): it starts the test of the schedule's newest
// completed backup, records it Skipped when there is none, and Failed when
// an Echo that no restore test created has the scratch name. It reports
// wait, the run time not used up, while an earlier test's scratch Echo
// still holds the name.
func (r *EchoBackupScheduleReconciler) beginRestoreTest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule,
	at, now time.Time, request string) (wait bool, _ error) {
	backup, err := r.newestCompletedBackup(ctx, s)
	if err != nil {
		return false, err
	}
	if backup == "" {
		r.recordRestoreTest(ctx, s, &echov1alpha1.RestoreTestResult{CompletionTime: metav1.NewTime(now),
			Outcome: echov1alpha1.RestoreTestSkipped, Reason: echov1alpha1.RestoreTestReasonNoCompletedBackup,
			Message: fmt.Sprintf("No restore test at %s: schedule %s has no completed EchoBackup yet", at.UTC().Format(time.RFC3339), s.Name)})
		return false, nil
	}
	scratch := scratchEchoName(s.Spec.Template.EchoName)
	free, wait, err := r.scratchNameFree(ctx, s, scratch, now)
	if err != nil || !free {
		return wait, err
	}
	return false, r.startRestoreTest(ctx, s, restoreTestRun{backup: backup, scratch: scratch, at: at, now: now, request: request})
}

// scratchState is what holds the name of a schedule's scratch Echo.
type scratchState int

const (
	scratchFree      scratchState = iota // no Echo
	scratchOurs                          // this schedule's, from an earlier test
	scratchOtherTest                     // another schedule's test of the Echo
	scratchTaken                         // an Echo no restore test created
)

// scratchEchoState looks at the Echo of the scratch name.
func (r *EchoBackupScheduleReconciler) scratchEchoState(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, scratch string) (scratchState, error) {
	echo := &echov1alpha1.Echo{}
	err := r.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: scratch}, echo)
	switch {
	case apierrors.IsNotFound(err):
		return scratchFree, nil
	case err != nil:
		return scratchFree, fmt.Errorf("reading Echo %s: %w", scratch, err)
	case isScratchEchoOf(echo, s.Name):
		return scratchOurs, nil
	case echo.Labels[echov1alpha1.RestoreTestOfLabel] != "":
		return scratchOtherTest, nil
	}
	return scratchTaken, nil
}

// scratchTakenMessage says what to fix when an Echo no restore test
// created has the scratch name.
func scratchTakenMessage(scratch string) string {
	return fmt.Sprintf("Echo %s exists and is not the scratch Echo of a restore test (it has no label %s): the operator never touches it. "+
		"Rename or delete that Echo; the next restore test creates the scratch Echo", scratch, echov1alpha1.RestoreTestOfLabel)
}

// scratchNameFree looks at the Echo of the scratch name: none lets the test
// start (free); this schedule's (an earlier test's, being deleted) or
// another schedule's (its test under way) makes it wait; any other Echo
// fails the test of this run time, with what to fix.
func (r *EchoBackupScheduleReconciler) scratchNameFree(ctx context.Context, s *echov1alpha1.EchoBackupSchedule,
	scratch string, now time.Time) (free, wait bool, _ error) {
	state, err := r.scratchEchoState(ctx, s, scratch)
	switch {
	case err != nil:
		return false, false, err
	case state == scratchFree:
		return true, false, nil
	case state == scratchOurs:
		return false, true, r.deleteScratchEcho(ctx, s, scratch)
	case state == scratchOtherTest:
		log.FromContext(ctx).Info("Restore test waits for another schedule's", "echo", scratch)
		return false, true, nil
	}
	message := scratchTakenMessage(scratch)
	r.Recorder.Event(s, corev1.EventTypeWarning, echov1alpha1.EventReasonScratchEchoTaken, message)
	s.Status.LastRestoreTest = &echov1alpha1.RestoreTestResult{CompletionTime: metav1.NewTime(now),
		Outcome: echov1alpha1.RestoreTestFailed, Reason: echov1alpha1.RestoreTestReasonScratchEchoTaken, Message: message}
	return false, false, nil
}

// ensureRestoreTestCondition sets RestoreTestReady: False while an Echo no
// restore test created has the scratch name, True otherwise.
func (r *EchoBackupScheduleReconciler) ensureRestoreTestCondition(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, next time.Time) error {
	scratch := scratchEchoName(s.Spec.Template.EchoName)
	state, err := r.scratchEchoState(ctx, s, scratch)
	if err != nil {
		return err
	}
	if state == scratchTaken {
		r.restoreTestNotReady(s, echov1alpha1.ScheduleReasonScratchEchoTaken, scratchTakenMessage(scratch))
		return nil
	}
	setCondition(&s.Status.Conditions, s.Generation, echov1alpha1.ScheduleConditionRestoreTestReady, metav1.ConditionTrue,
		echov1alpha1.ScheduleReasonScheduled, "Next restore test at "+next.UTC().Format(time.RFC3339))
	return nil
}

// newestCompletedBackup names the schedule's newest completed backup not
// being deleted; "" when it has none.
func (r *EchoBackupScheduleReconciler) newestCompletedBackup(ctx context.Context, s *echov1alpha1.EchoBackupSchedule) (string, error) {
	backups, err := r.backupsOf(ctx, s)
	if err != nil {
		return "", err
	}
	sortNewestFirst(backups)
	for _, b := range backups {
		if backupSucceeded(b) && b.DeletionTimestamp.IsZero() {
			return b.Name, nil
		}
	}
	return "", nil
}

// restoreTestRun is a restore test about to start: the backup it tests,
// the scratch Echo it restores into, its run time, now, and the request it
// honours ("" for the cron's).
type restoreTestRun struct {
	backup, scratch, request string
	at, now                  time.Time
}

// startRestoreTest creates the EchoRestore of a restore test, owned by the
// schedule; the restore creates the scratch Echo.
func (r *EchoBackupScheduleReconciler) startRestoreTest(ctx context.Context, s *echov1alpha1.EchoBackupSchedule, run restoreTestRun) error {
	rs := &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.Namespace, Name: restoreTestName(s.Name, run.at),
			Labels: map[string]string{echov1alpha1.RestoreTestOfLabel: s.Name},
			Annotations: map[string]string{
				echov1alpha1.ScheduledAtAnnotation:        run.at.UTC().Format(time.RFC3339),
				echov1alpha1.RestoreTestStartedAnnotation: run.now.UTC().Format(time.RFC3339),
			},
		},
		Spec: echov1alpha1.EchoRestoreSpec{
			Source:       echov1alpha1.RestoreSource{BackupName: run.backup},
			EchoName:     run.scratch,
			ExistingData: echov1alpha1.ExistingDataFail,
			Timeout:      &metav1.Duration{Duration: restoreTestTimeout(s.Spec.RestoreTest)},
		},
	}
	if run.request != "" {
		rs.Annotations[echov1alpha1.RestoreTestRequestAnnotation] = run.request
	}
	if err := controllerutil.SetControllerReference(s, rs, r.Scheme()); err != nil {
		return fmt.Errorf("owning EchoRestore %s: %w", rs.Name, err)
	}
	err := r.Create(ctx, rs)
	if apierrors.IsAlreadyExists(err) {
		existing := &echov1alpha1.EchoRestore{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(rs), existing); err != nil {
			return fmt.Errorf("reading EchoRestore %s: %w", rs.Name, err)
		}
		if !metav1.IsControlledBy(existing, s) {
			r.recordRestoreTest(ctx, s, &echov1alpha1.RestoreTestResult{Restore: rs.Name, Backup: run.backup, CompletionTime: metav1.NewTime(run.now),
				Outcome: echov1alpha1.RestoreTestFailed, Reason: echov1alpha1.ReasonJobNotOwned,
				Message: fmt.Sprintf("EchoRestore %s exists and is not this schedule's restore test: delete it, and the next run time tests again", rs.Name)})
			return nil
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("creating EchoRestore %s: %w", rs.Name, err)
	}
	log.FromContext(ctx).Info("Started restore test", "restore", rs.Name, "backup", run.backup, "echo", run.scratch, "requested", run.request != "")
	reason, why := echov1alpha1.EventReasonRestoreTestStarted, "to test it"
	if run.request != "" {
		reason, why = echov1alpha1.EventReasonRestoreTestRequested, "as annotation "+echov1alpha1.RestoreTestNowAnnotation+" asked"
	}
	r.Recorder.Eventf(s, corev1.EventTypeNormal, reason,
		"Restoring EchoBackup %s into scratch Echo %s (EchoRestore %s) %s", run.backup, run.scratch, rs.Name, why)
	return nil
}

// earliest merges two results: the sooner requeue wins.
func earliest(a, b ctrl.Result) ctrl.Result {
	if a.RequeueAfter == 0 || (b.RequeueAfter > 0 && b.RequeueAfter < a.RequeueAfter) {
		a.RequeueAfter = b.RequeueAfter
	}
	return a
}
