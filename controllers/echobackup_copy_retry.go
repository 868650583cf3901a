package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// A failed copy made again on request (RetryCopyAnnotation): its status
// goes back to Pending, and reconcileCopies creates a new Job of the same
// name. The status is written before the request is removed, so a crash
// between the two makes the copy again at worst, never loses the request.

// retryRequested are the copy names RetryCopyAnnotation lists.
func retryRequested(b *echov1alpha1.EchoBackup) []string {
	return annotationList(b, echov1alpha1.RetryCopyAnnotation)
}

// retryRequestedCopies starts each failed copy the request lists again,
// once the cache shows its failed Job gone (a Job of that name it still
// showed would be taken for the new one). It returns the names still
// waiting for that; the others are done with: started again, or not a
// failed copy of this backup.
func (r *EchoBackupReconciler) retryRequestedCopies(ctx context.Context, b *echov1alpha1.EchoBackup) (waiting []string, err error) {
	if !backupSucceeded(*b) {
		return nil, nil
	}
	for _, name := range retryRequested(b) {
		st := findCopyStatus(b, name)
		if st == nil || st.Phase != echov1alpha1.PhaseFailed || !slices.ContainsFunc(b.Spec.CopyTo, func(c echov1alpha1.BackupCopy) bool { return c.Name == name }) {
			log.FromContext(ctx).Info("Dropping a copy retry request: no failed copy of that name", "copy", name)
			continue
		}
		gone, err := r.copyJobGone(ctx, b, name)
		if err != nil {
			return nil, err
		}
		if !gone {
			waiting = append(waiting, name)
			continue
		}
		restartCopy(b, st)
		log.FromContext(ctx).Info("Copying the backup again", "copy", name)
		r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonCopyRetried,
			"Copying the backup to %s again, as annotation %s asks", name, echov1alpha1.RetryCopyAnnotation)
	}
	return waiting, nil
}

// copyJobGone says whether the cache shows no Job of the copy: the failed
// one is removed once its outcome is recorded (removeFinishedCopyJobs).
func (r *EchoBackupReconciler) copyJobGone(ctx context.Context, b *echov1alpha1.EchoBackup, name string) (bool, error) {
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: copyJobName(b, name)}, &batchv1.Job{})
	if err == nil {
		return false, nil
	}
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, fmt.Errorf("reading the Job of copy %s: %w", name, err)
}

// restartCopy puts a failed copy back to Pending, forgetting its outcome,
// its mover's log and the record of its Job, so that a Job created next
// under the same name is known by its signature until its UID is recorded.
func restartCopy(b *echov1alpha1.EchoBackup, st *echov1alpha1.BackupCopyStatus) {
	*st = echov1alpha1.BackupCopyStatus{Name: st.Name, Phase: echov1alpha1.PhasePending, Reason: echov1alpha1.CopyReasonWaitingForBackup}
	job := copyJobName(b, st.Name)
	b.Status.Jobs = slices.DeleteFunc(b.Status.Jobs, func(j echov1alpha1.JobReference) bool { return j.Name == job })
}

// ensureRetryRequest leaves in RetryCopyAnnotation the names still
// waiting, and removes it when none is, with a patch of the metadata alone.
func (r *EchoBackupReconciler) ensureRetryRequest(ctx context.Context, b *echov1alpha1.EchoBackup, waiting []string) error {
	value, ok := b.Annotations[echov1alpha1.RetryCopyAnnotation]
	want := strings.Join(waiting, ",")
	if !ok || value == want {
		return nil
	}
	m := &echov1alpha1.EchoBackup{ObjectMeta: *b.ObjectMeta.DeepCopy()}
	orig := m.DeepCopy()
	if want == "" {
		delete(m.Annotations, echov1alpha1.RetryCopyAnnotation)
	} else {
		m.Annotations[echov1alpha1.RetryCopyAnnotation] = want
	}
	if err := r.Patch(ctx, m, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating annotation %s: %w", echov1alpha1.RetryCopyAnnotation, err)
	}
	return nil
}
