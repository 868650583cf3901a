package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// completeFailedCopy completes b, copied to offsite (completeCopiedBackup),
// fails its copy and waits until the copy is Failed and its Job gone,
// which it returns.
func completeFailedCopy(t *testing.T, b *echov1alpha1.EchoBackup) *batchv1.Job {
	t.Helper()
	failed := completeCopiedBackup(t, b)
	finishMoverJob(t, failed, `{"error":"copy to s3://offsite-bucket/x: Unavailable: no such host","reason":"Unavailable","retryable":true}`, false)
	Eventually(func(g Gomega) *echov1alpha1.BackupCopyStatus {
		return copyOf(getBackup(g, client.ObjectKeyFromObject(b)), "offsite")
	}, timeout, interval).Should(And(Not(BeNil()), HaveField("Phase", echov1alpha1.PhaseFailed)))
	expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: failed.Name}})
	// The garbage collector, which envtest lacks, would have deleted the
	// failed attempt's pod with its Job.
	Expect(k8sClient.Delete(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: failed.Name + "-pod"}})).To(Succeed())
	return failed
}

// TestEchoBackupRetryCopy: a failed copy listed in echo.dev/retry-copy is
// made again by a new Job once the failed one is gone, and the request is
// removed; a name that is no failed copy is dropped without effect.
func TestEchoBackupRetryCopy(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	b := newBackup(ns, "nightly-r", "journal")
	failed := completeFailedCopy(t, b)
	key := client.ObjectKeyFromObject(b)

	setBackupAnnotation(key, echov1alpha1.RetryCopyAnnotation, "offsite,elsewhere")
	retried := &batchv1.Job{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: failed.Name}, retried)).To(Succeed())
		g.Expect(retried.UID).NotTo(Equal(failed.UID))
	}, timeout, interval).Should(Succeed())
	Eventually(func(g Gomega) {
		got := getBackup(g, key)
		g.Expect(got.Annotations).NotTo(HaveKey(echov1alpha1.RetryCopyAnnotation))
		g.Expect(copyOf(got, "offsite").Phase).To(Equal(echov1alpha1.PhaseRunning))
		g.Expect(copyOf(got, "offsite").MoverLog).To(BeNil(), "the failed attempt's log is kept no more")
		g.Expect(eventReasons(g, ns, key.Name)).To(ContainElement(echov1alpha1.EventReasonCopyRetried))
	}, timeout, interval).Should(Succeed())

	finishMoverJob(t, retried, `{"size":10,"checksum":"sha256:ab","location":"s3://offsite-bucket/team-a/x","files":1}`, true)
	Eventually(func(g Gomega) {
		got := getBackup(g, key)
		g.Expect(copyOf(got, "offsite").Phase).To(Equal(echov1alpha1.PhaseCompleted))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, echov1alpha1.BackupConditionCopied)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
	expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: failed.Name}})

	t.Run("a copy that completed is not made again", func(t *testing.T) {
		RegisterTestingT(t)
		setBackupAnnotation(key, echov1alpha1.RetryCopyAnnotation, "offsite")
		Eventually(func(g Gomega) map[string]string {
			return getBackup(g, key).Annotations
		}, timeout, interval).ShouldNot(HaveKey(echov1alpha1.RetryCopyAnnotation))
		expectNoJob(t, ns, failed.Name)
		Expect(copyOf(getBackup(Default, key), "offsite").Phase).To(Equal(echov1alpha1.PhaseCompleted))
	})
}

// TestEchoBackupRetryCopyThenDelete: a retry request and the backup's
// deletion sent back to back (deletionPolicy Delete) leave no copy Job
// writing behind the deletion: the backup goes, with each artifact it may
// have left deleted first, whichever of the two the operator saw first.
func TestEchoBackupRetryCopyThenDelete(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	b := newDeleteBackup(ns, "raced", "journal")
	failed := completeFailedCopy(t, b)
	key := client.ObjectKeyFromObject(b)

	setBackupAnnotation(key, echov1alpha1.RetryCopyAnnotation, "offsite")
	deleteBackup(t, b)

	// Play the delete Jobs the deletion starts, until the backup is gone.
	finished := map[string]bool{}
	Eventually(func(g Gomega) bool {
		for _, name := range []string{"raced-delete-offsite", "raced-delete"} {
			job := &batchv1.Job{}
			if finished[name] || k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job) != nil {
				continue
			}
			finishMoverJob(t, job, deleteSucceeded, true)
			finished[name] = true
		}
		err := k8sClient.Get(ctx, key, &echov1alpha1.EchoBackup{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the backup is not gone")
	Expect(finished).To(HaveKey("raced-delete"), "the backup's own artifact was deleted")
	copyJob := &batchv1.Job{}
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: failed.Name}, copyJob)
	Expect(apierrors.IsNotFound(err) || !copyJob.DeletionTimestamp.IsZero()).To(BeTrue(),
		"a copy Job outlives its backup's deletion: %v", err)
}
