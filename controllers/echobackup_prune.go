package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The pruning of a complete backup at some of its locations
// (PruneAnnotation, which a schedule's retention per location sets):
// with deletionPolicy Delete, the delete Job of a listed copy removes it
// once it completed, and the backup's own delete Job removes the
// artifact in its storage once no copy is being made from it. Each is
// recorded in the status (status.copies[].phase Pruned, the Pruned
// condition); the EchoBackup stays, and its deletion later deletes only
// what is left.

// reconcilePrune moves the pruning of each location PruneAnnotation lists
// on. A copy not completed yet is left until it is: what its Job writes
// is not deleted from under it.
func (r *EchoBackupReconciler) reconcilePrune(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	requested := pruneRequested(b)
	if err := r.ensurePruneRetainedReported(ctx, b, requested); err != nil {
		return ctrl.Result{}, err
	}
	if len(requested) == 0 || b.Spec.DeletionPolicy != echov1alpha1.DeletionPolicyDelete || !backupSucceeded(*b) {
		return ctrl.Result{}, nil
	}
	var result ctrl.Result
	for _, c := range b.Spec.CopyTo {
		st := findCopyStatus(b, c.Name)
		if !slices.Contains(requested, echov1alpha1.PruneCopyPrefix+c.Name) || st == nil || st.Phase != echov1alpha1.PhaseCompleted {
			continue
		}
		res, err := r.deleteCopy(ctx, b, c.Name, r.copyPruned)
		if err != nil {
			return ctrl.Result{}, err
		}
		result = sooner(result, res)
	}
	if slices.Contains(requested, echov1alpha1.PruneStorage) && !backupPruned(b) && !copiesUnderway(b) {
		res, err := r.deleteArtifact(ctx, b, r.artifactPruned)
		if err != nil {
			return ctrl.Result{}, err
		}
		result = sooner(result, res)
	}
	return result, nil
}

// ensurePruneRetainedReported says, in the Pruned condition and a Warning
// Event, that a prune request of a backup with deletionPolicy Retain
// deletes nothing; once the request or the policy changes, the condition
// goes.
func (r *EchoBackupReconciler) ensurePruneRetainedReported(ctx context.Context, b *echov1alpha1.EchoBackup, requested []string) error {
	retained := len(requested) > 0 && b.Spec.DeletionPolicy != echov1alpha1.DeletionPolicyDelete && backupSucceeded(*b)
	c := meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionPruned)
	reported := c != nil && c.Reason == echov1alpha1.BackupReasonPruneRetained
	msg := truncateMessage(fmt.Sprintf("Annotation %s lists %s, but deletionPolicy is %s: nothing is deleted. Set spec.deletionPolicy to Delete to prune, or remove the annotation",
		echov1alpha1.PruneAnnotation, strings.Join(requested, ","), b.Spec.DeletionPolicy))
	if retained == reported && (!retained || c.Message == msg) {
		return nil
	}
	orig := b.DeepCopy()
	if !retained {
		meta.RemoveStatusCondition(&b.Status.Conditions, echov1alpha1.BackupConditionPruned)
		return r.patchStatus(ctx, orig, b)
	}
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionPruned, metav1.ConditionFalse, echov1alpha1.BackupReasonPruneRetained, msg)
	if err := r.patchStatus(ctx, orig, b); err != nil {
		return err
	}
	r.Recorder.Event(b, corev1.EventTypeWarning, echov1alpha1.EventReasonPruneRetained, msg)
	return nil
}

// copiesUnderway says whether a copy is still to be made or being made:
// its Job reads the artifact in the backup's own storage.
func copiesUnderway(b *echov1alpha1.EchoBackup) bool {
	for _, c := range b.Spec.CopyTo {
		if st := findCopyStatus(b, c.Name); st == nil || !copyFinished(st) {
			return true
		}
	}
	return false
}

// copyPruned records that the copy name was pruned: its phase turns
// Pruned, saying where it was; then its delete Job goes.
func (r *EchoBackupReconciler) copyPruned(ctx context.Context, b *echov1alpha1.EchoBackup, name string, job *batchv1.Job) error {
	orig := b.DeepCopy()
	st := findCopyStatus(b, name)
	if st == nil {
		return removeJob(ctx, r.Client, job)
	}
	st.Phase, st.Reason = echov1alpha1.PhasePruned, echov1alpha1.BackupReasonArtifactPruned
	st.Message = truncateMessage(fmt.Sprintf("Deleted from %s under the retention of the backup's schedule (annotation %s)", st.Key, echov1alpha1.PruneAnnotation))
	if err := r.patchStatus(ctx, orig, b); err != nil {
		return err
	}
	log.FromContext(ctx).Info("Pruned a copy of the backup", "copy", name, "location", st.Key)
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonArtifactPruned, "Pruned copy %s at %s", name, st.Key)
	return removeJob(ctx, r.Client, job)
}

// artifactPruned records that the artifact in the backup's own storage
// was pruned, in the Pruned condition; then its delete Job goes.
func (r *EchoBackupReconciler) artifactPruned(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job) error {
	orig := b.DeepCopy()
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionPruned, metav1.ConditionTrue, echov1alpha1.BackupReasonArtifactPruned,
		fmt.Sprintf("Deleted the artifact at %s under the retention of the backup's schedule (annotation %s): restore from a copy", b.Status.Location, echov1alpha1.PruneAnnotation))
	if err := r.patchStatus(ctx, orig, b); err != nil {
		return err
	}
	log.FromContext(ctx).Info("Pruned the backup's artifact", "location", b.Status.Location)
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonArtifactPruned, "Pruned the artifact at %s", b.Status.Location)
	return removeJob(ctx, r.Client, job)
}

// sooner is the result that brings the next reconcile first.
func sooner(a, b ctrl.Result) ctrl.Result {
	if b.RequeueAfter > 0 && (a.RequeueAfter == 0 || b.RequeueAfter < a.RequeueAfter) {
		return b
	}
	return a
}

// copiesHoldingNames names the copies of b that completed and were not
// pruned: where a restore can still read it.
func copiesHoldingNames(b *echov1alpha1.EchoBackup) []string {
	var out []string
	for _, c := range b.Status.Copies {
		if c.Phase == echov1alpha1.PhaseCompleted {
			out = append(out, c.Name)
		}
	}
	return out
}
