package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// TestEchoBackupRetryCopy: a failed copy listed in echo.dev/retry-copy is
// made again by a new Job once the failed one is gone, and the request is
// removed; a name that is no failed copy is dropped without effect.
func TestEchoBackupRetryCopy(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	b := newBackup(ns, "nightly-r", "journal")
	failed := completeCopiedBackup(t, b)
	key := client.ObjectKeyFromObject(b)
	finishMoverJob(t, failed, `{"error":"copy to s3://offsite-bucket/x: Unavailable: no such host","reason":"Unavailable","retryable":true}`, false)
	Eventually(func(g Gomega) *echov1alpha1.BackupCopyStatus {
		return copyOf(getBackup(g, key), "offsite")
	}, timeout, interval).Should(And(Not(BeNil()), HaveField("Phase", echov1alpha1.PhaseFailed)))
	expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: failed.Name}})

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

	// The garbage collector, which envtest lacks, would have deleted the
	// failed attempt's pod with its Job.
	Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: failed.Name + "-pod"}})).To(Succeed())
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
