package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// Quiescing: while a restore writes an Echo's data, the Echo holds the
// RestoreAnnotation, its release runs no pod, and the restore waits for
// every pod to be gone; once the data is in place the Echo is given back.

// holdEcho quiesces an existing Echo for this restore. The patch carries
// the Echo's resource version, so a concurrent restore cannot take it too.
func (r *EchoRestoreReconciler) holdEcho(ctx context.Context, rs *echov1alpha1.EchoRestore, echo *echov1alpha1.Echo) error {
	patch := client.MergeFromWithOptions(echo.DeepCopy(), client.MergeFromWithOptimisticLock{})
	metav1.SetMetaDataAnnotation(&echo.ObjectMeta, echov1alpha1.RestoreAnnotation, rs.Name)
	if err := r.Patch(ctx, echo, patch); err != nil {
		return fmt.Errorf("quiescing Echo %s: %w", echo.Name, err)
	}
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, echov1alpha1.EventReasonEchoQuiesced, "Scaling Echo %s to zero to restore its data", echo.Name)
	return nil
}

// quiesced reports whether an Echo held by a restore runs no pod: its
// Deployment (which the release creates for a new Echo) asks for none and
// has none, not even one shutting down, and the Echo reports Restoring, so
// its Ready condition can no longer be one from before the hold.
func (r *EchoRestoreReconciler) quiesced(ctx context.Context, echo *echov1alpha1.Echo) (bool, string, error) {
	d := &appsv1.Deployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: echo.Namespace, Name: echo.Name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Waiting for the release of Echo %s: %s", echo.Name, readyMessage(echo)), nil
		}
		return false, "", fmt.Errorf("reading the Deployment of Echo %s: %w", echo.Name, err)
	}
	switch {
	case d.Spec.Replicas == nil || *d.Spec.Replicas != 0 || d.Status.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("Waiting for the release to scale Echo %s to zero: %s", echo.Name, readyMessage(echo)), nil
	case d.Status.Replicas != 0:
		return false, fmt.Sprintf("Waiting for the %d pods of Echo %s to stop", d.Status.Replicas, echo.Name), nil
	case readyReason(echo) != echov1alpha1.EchoReasonRestoring:
		return false, fmt.Sprintf("Waiting for Echo %s to report Restoring", echo.Name), nil
	}
	// The Deployment no longer counts pods that are shutting down, which
	// may still write: ask the API server (the cache holds no echo pods)
	// for one page of one pod's metadata and the count of the rest.
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := r.APIReader.List(ctx, pods, client.InNamespace(echo.Namespace),
		client.MatchingLabels(chart.SelectorLabels(echo.Name)), client.Limit(1)); err != nil {
		return false, "", fmt.Errorf("listing the pods of Echo %s: %w", echo.Name, err)
	}
	if n := int64(len(pods.Items)) + ptr.Deref(pods.RemainingItemCount, 0); n > 0 {
		return false, fmt.Sprintf("Waiting for the %d pods of Echo %s to shut down", n, echo.Name), nil
	}
	return true, "", nil
}

// completeWhenReady gives the Echo back once its data is in place and
// completes the restore when the Echo is Ready for its generation again.
func (r *EchoRestoreReconciler) completeWhenReady(ctx context.Context, rs *echov1alpha1.EchoRestore) (ctrl.Result, error) {
	echo, err := r.releaseHold(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if echo == nil {
		r.fail(rs, echov1alpha1.RestoreReasonEchoDeleted, fmt.Sprintf(
			"Echo %s was deleted before it served the restored data", rs.Status.EchoName))
		return ctrl.Result{}, nil
	}
	ready := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != echo.Generation ||
		echo.Annotations[echov1alpha1.RestoreAnnotation] != "" {
		r.progress(rs, echov1alpha1.RestoreReasonWaitingForEcho,
			fmt.Sprintf("Waiting for Echo %s to be Ready: %s", echo.Name, readyMessage(echo)))
		return ctrl.Result{}, nil
	}
	r.complete(rs)
	return ctrl.Result{}, nil
}

// reconcileRelease ends a finished or deleted restore: once no pod of its
// restore Job can still write the Echo's data, it gives back the Echo it
// holds, removes its finished Jobs (their pods would keep the Echo's claim
// from being deleted) and lets the restore go.
func (r *EchoRestoreReconciler) reconcileRelease(ctx context.Context, rs *echov1alpha1.EchoRestore) (ctrl.Result, error) {
	if stopped, err := r.stopRestoreJob(ctx, rs); err != nil || !stopped {
		return ctrl.Result{}, err
	}
	if _, err := r.releaseHold(ctx, rs); err != nil {
		return ctrl.Result{}, err
	}
	if restoreFinished(rs) {
		for _, name := range []string{inspectJobName(rs), restoreJobName(rs)} {
			if err := removeOwnJob(ctx, r.Client, rs.Namespace, rs.Status.Jobs, name); err != nil {
				return ctrl.Result{}, err
			}
		}
	}
	return ctrl.Result{}, ensureFinalizer(ctx, r.Client, rs, echov1alpha1.RestoreFinalizer, false)
}

// stopRestoreJob reports whether no pod of the restore's restore Job can
// still write the Echo's data: there is no such Job, or it has finished
// (the Job controller sets Complete or Failed only once its pods are
// terminal). A Job still running, as when the restore timed out or was
// deleted mid-way, is deleted with its pods in the foreground: it is gone
// only once they are, and its deletion brings the restore back here. A
// Job of its name that the operator did not create for the restore is
// not its restore Job, and is left alone.
func (r *EchoRestoreReconciler) stopRestoreJob(ctx context.Context, rs *echov1alpha1.EchoRestore) (bool, error) {
	job, err := getOwnJob(ctx, r.Client, restoreWork(r.JobSigner, rs), rs.Status.Jobs, rs.Namespace, restoreJobName(rs))
	if _, foreign := asJobNotOwned(err); foreign || (err == nil && job == nil) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if complete, failed := jobFinished(job); complete || failed {
		return true, nil
	}
	if job.DeletionTimestamp.IsZero() {
		err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &job.UID})
		if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			return false, fmt.Errorf("stopping Job %s: %w", job.Name, err)
		}
		log.FromContext(ctx).Info("Stopping the restore Job before giving the Echo back", "job", job.Name)
	}
	return false, nil
}

// releaseHold removes this restore's hold from its Echo, if it has one,
// and returns the Echo (nil when it does not exist).
func (r *EchoRestoreReconciler) releaseHold(ctx context.Context, rs *echov1alpha1.EchoRestore) (*echov1alpha1.Echo, error) {
	if rs.Status.EchoName == "" {
		return nil, nil
	}
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Status.EchoName}, echo); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if echo.Annotations[echov1alpha1.RestoreAnnotation] != rs.Name {
		return echo, nil
	}
	if err := r.giveBack(ctx, echo); err != nil {
		return nil, err
	}
	return echo, nil
}

// giveBack removes the restore hold from an Echo. The patch carries the
// Echo's resource version: it never removes a hold taken since.
func (r *EchoRestoreReconciler) giveBack(ctx context.Context, echo *echov1alpha1.Echo) error {
	patch := client.MergeFromWithOptions(echo.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(echo.Annotations, echov1alpha1.RestoreAnnotation)
	if err := r.Patch(ctx, echo, patch); err != nil {
		return fmt.Errorf("giving back Echo %s: %w", echo.Name, err)
	}
	log.FromContext(ctx).Info("Gave back the Echo", "echo", echo.Name)
	return nil
}

// releaseOrphanedHolds gives back the Echoes held by a restore that no
// longer exists (its finalizer removed by hand, or the annotation set by
// hand): nothing else would ever let them serve again. The restore's
// absence is read from the API server, not the cache, which may not have
// seen a restore that has just been created.
func (r *EchoRestoreReconciler) releaseOrphanedHolds(ctx context.Context, restore client.ObjectKey) error {
	held := &echov1alpha1.EchoList{}
	if err := r.List(ctx, held, client.InNamespace(restore.Namespace), client.MatchingFields{echoHolderField: restore.Name}); err != nil {
		return fmt.Errorf("listing the Echoes held by EchoRestore %s: %w", restore.Name, err)
	}
	if len(held.Items) == 0 {
		return nil
	}
	err := r.APIReader.Get(ctx, restore, &echov1alpha1.EchoRestore{})
	if !apierrors.IsNotFound(err) {
		return client.IgnoreNotFound(err)
	}
	for i := range held.Items {
		echo := &held.Items[i]
		if err := r.giveBack(ctx, echo); err != nil {
			return err
		}
		r.Recorder.Eventf(echo, corev1.EventTypeWarning, echov1alpha1.EventReasonRestoreHoldReleased,
			"EchoRestore %s, which held this Echo, does not exist: the Echo serves again", restore.Name)
	}
	return nil
}

func readyReason(echo *echov1alpha1.Echo) string {
	if c := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func readyMessage(echo *echov1alpha1.Echo) string {
	if c := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady); c != nil {
		return c.Message
	}
	return "no Ready condition yet"
}
