package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// A data mover pod the scheduler cannot place (its nodeSelector,
// tolerations, affinity or resources meet no node) leaves its Job running
// with nothing to show but the pod's PodScheduled condition. The backup,
// copy or restore says so, with the scheduler's account, until a node
// takes the pod; the pod's scheduling events bring the reconcile.

// podUnschedulable is the scheduler's account of why the newest pod of
// the Job cannot be placed; empty when it can, or when no pod of the Job's
// own (genuineMoverPod) says otherwise. A read error counts as empty: the
// Job's progress is all that is lost.
func podUnschedulable(ctx context.Context, c client.Reader, job *batchv1.Job) string {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return ""
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if genuineMoverPod(p, job) && (newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp)) {
			newest = p
		}
	}
	if newest == nil {
		return ""
	}
	for _, cond := range newest.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			if cond.Message == "" {
				return "the scheduler gave no reason"
			}
			return cond.Message
		}
	}
	return ""
}

// unschedulableMessage says that the pod of job waits for a node, why, and
// what decides where it goes.
func unschedulableMessage(job *batchv1.Job, why string) string {
	return fmt.Sprintf("The data mover pod of Job %s cannot be scheduled: %s. Its nodeSelector, tolerations, affinity and resources "+
		"are spec.mover's, else its location's mover's, else the defaults (a backup's and a restore's take the Echo's nodeSelector and "+
		"tolerations): fix what no node meets, or make room; the Job runs once a node takes the pod", job.Name, why)
}

// setMoverProgress sets the Complete condition of a backup or restore
// whose Job runs: False with reason and message, or, while the Job's pod
// cannot be scheduled (unschedulable, podUnschedulable's account), with
// ReasonMoverUnschedulable, and a Warning Event on obj when it starts to
// wait.
func setMoverProgress(rec record.EventRecorder, obj client.Object, conds *[]metav1.Condition, job *batchv1.Job, unschedulable, reason, message string) {
	if unschedulable != "" {
		message = unschedulableMessage(job, unschedulable)
		if c := meta.FindStatusCondition(*conds, echov1alpha1.BackupConditionComplete); c == nil || c.Reason != echov1alpha1.ReasonMoverUnschedulable {
			rec.Event(obj, corev1.EventTypeWarning, echov1alpha1.EventReasonMoverUnschedulable, message)
		}
		reason = echov1alpha1.ReasonMoverUnschedulable
	}
	setCondition(conds, obj.GetGeneration(), echov1alpha1.BackupConditionComplete, metav1.ConditionFalse, reason, message)
}

// moverPodOwner maps a data mover pod to the object its label names
// (label: BackupLabel or RestoreLabel). The label is the Job template's,
// which anyone who may create pods can copy: a match only brings a
// reconcile, which reads nothing but the genuine pods of its own Jobs.
func moverPodOwner(label string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, pod client.Object) []reconcile.Request {
		name := pod.GetLabels()[label]
		if name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: pod.GetNamespace(), Name: name}}}
	})
}

// podSchedulingChanged passes the updates of a pod whose PodScheduled
// condition changed: a pod that cannot be placed, or is placed at last.
var podSchedulingChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		before, after := scheduledCondition(e.ObjectOld), scheduledCondition(e.ObjectNew)
		return before != after
	},
}

// scheduledCondition is the status and reason of a pod's PodScheduled
// condition; empty for another object.
func scheduledCondition(o client.Object) string {
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return ""
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}
