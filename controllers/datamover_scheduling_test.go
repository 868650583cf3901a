package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// noNodeMatches is what the scheduler says of a pod whose nodeSelector no
// node has.
const noNodeMatches = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."

// schedulePod plays the scheduler for a pod of the Job named name: its
// PodScheduled condition becomes False (Unschedulable, with why) or, with
// why empty, True.
func schedulePod(t *testing.T, job *batchv1.Job, name, why string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: job.Namespace, Name: name}, pod); err != nil {
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: name, Labels: job.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
			Spec: job.Spec.Template.Spec,
		}
		Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	}
	cond := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}
	if why != "" {
		cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, corev1.PodReasonUnschedulable, why
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{cond}}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
}

// TestMoverPodUnschedulable: while a data mover pod cannot be scheduled,
// the backup (its copy, a restore) is Pending with reason MoverUnschedulable, the
// scheduler's account and what decides placement, and a Warning Event;
// once a node takes the pod, it is under way again.
func TestMoverPodUnschedulable(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newBackup(ns, "placed", "journal")
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	key := client.ObjectKeyFromObject(b)
	job := waitJob(t, ns, "placed-backup")

	schedulePod(t, job, "placed-backup-x", noNodeMatches)
	Eventually(func(g Gomega) {
		got := getBackup(g, key)
		c := meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionComplete)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(echov1alpha1.ReasonMoverUnschedulable))
		g.Expect(c.Message).To(And(ContainSubstring(noNodeMatches), ContainSubstring("spec.mover")))
		g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhasePending))
		g.Expect(eventReasons(g, ns, key.Name)).To(ContainElement(echov1alpha1.EventReasonMoverUnschedulable))
	}, timeout, interval).Should(Succeed())

	schedulePod(t, job, "placed-backup-x", "")
	Eventually(func(g Gomega) {
		got := getBackup(g, key)
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionComplete).Reason).To(Equal(echov1alpha1.BackupReasonBackingUp))
		g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseRunning))
	}, timeout, interval).Should(Succeed())

	t.Run("a restore's pod", func(t *testing.T) {
		RegisterTestingT(t)
		completedBackup(t, ns, "source", "journal")
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "placed-restore"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "source"}}}
		Expect(k8sClient.Create(context.Background(), rs)).To(Succeed())
		inspect := waitJob(t, ns, "placed-restore-inspect")
		schedulePod(t, inspect, "placed-restore-inspect-x", noNodeMatches)
		Eventually(func(g Gomega) {
			got := &echov1alpha1.EchoRestore{}
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(rs), got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.RestoreConditionComplete)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(echov1alpha1.ReasonMoverUnschedulable))
			g.Expect(c.Message).To(ContainSubstring(noNodeMatches))
			g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhasePending))
			g.Expect(eventReasons(g, ns, rs.Name)).To(ContainElement(echov1alpha1.EventReasonMoverUnschedulable))
		}, timeout, interval).Should(Succeed())
		schedulePod(t, inspect, "placed-restore-inspect-x", "")
		Eventually(func(g Gomega) string {
			got := &echov1alpha1.EchoRestore{}
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(rs), got)).To(Succeed())
			return meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.RestoreConditionComplete).Reason
		}, timeout, interval).Should(Equal(echov1alpha1.RestoreReasonInspecting))
	})

	t.Run("a copy's pod", func(t *testing.T) {
		RegisterTestingT(t)
		copied := newBackup(ns, "copied", "journal")
		createOffsiteLocation(t, ns)
		copied.Spec.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite")}
		completeBackup(t, copied)
		copyJob := waitJob(t, ns, "copied-copy-offsite")
		schedulePod(t, copyJob, "copied-copy-offsite-x", noNodeMatches)
		Eventually(func(g Gomega) {
			st := copyOf(getBackup(g, client.ObjectKeyFromObject(copied)), "offsite")
			g.Expect(st).NotTo(BeNil())
			g.Expect(st.Phase).To(Equal(echov1alpha1.PhasePending))
			g.Expect(st.Reason).To(Equal(echov1alpha1.ReasonMoverUnschedulable))
			g.Expect(st.Message).To(ContainSubstring(noNodeMatches))
		}, timeout, interval).Should(Succeed())
		schedulePod(t, copyJob, "copied-copy-offsite-x", "")
		Eventually(func(g Gomega) string {
			return copyOf(getBackup(g, client.ObjectKeyFromObject(copied)), "offsite").Reason
		}, timeout, interval).Should(Equal(echov1alpha1.CopyReasonCopying))
	})
}
