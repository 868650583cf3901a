package controllers_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// TestBackupKeepsTheMoverLog: a finished backup's status keeps the end of
// its mover's log, read once from the Job's own pod before the Job is
// deleted; a log the API server cannot serve (no kubelet runs here) is
// recorded as unavailable, and the outcome is recorded all the same.
func TestBackupKeepsTheMoverLog(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	rollOut(t, types.NamespacedName{Namespace: ns, Name: "journal"})

	t.Run("a failed backup keeps its pod's log, not a look-alike's", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "fails", "journal")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		job := waitJob(t, ns, "fails-backup")
		// A pod anyone labelled as the Job's, created later: it is not
		// the Job's, and its log is not read.
		labels := map[string]string{batchv1.ControllerUidLabel: string(job.UID)}
		for k, v := range job.Spec.Template.Labels {
			labels[k] = v
		}
		lookAlike := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fails-backup-tenant", Labels: labels},
			Spec: job.Spec.Template.Spec}
		Expect(k8sClient.Create(ctx, lookAlike)).To(Succeed())
		podLogs.serve(ns, lookAlike.Name, "all good, nothing to see\n")
		long := strings.Repeat(`{"level":"INFO","msg":"a step"}`+"\n", 300)
		podLogs.serve(ns, job.Name+"-pod", long+`{"level":"ERROR","msg":"backup failed","error":"bucket does not exist"}`+"\n")

		finishMoverJob(t, job, `{"error":"bucket does not exist","reason":"BucketNotFound"}`, false)
		Eventually(func(g Gomega) {
			got := getBackup(g, client.ObjectKeyFromObject(b))
			g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseFailed))
			kept := got.Status.MoverLog
			g.Expect(kept).NotTo(BeNil())
			g.Expect(kept.Job).To(Equal(job.Name))
			g.Expect(kept.JobUID).To(Equal(job.UID))
			g.Expect(kept.Pod).To(Equal(job.Name + "-pod"))
			g.Expect(kept.Attempt).To(BeEquivalentTo(1))
			g.Expect(kept.Unavailable).To(BeEmpty())
			g.Expect(kept.Truncated).To(BeTrue())
			g.Expect(len(kept.Log)).To(BeNumerically("<=", echov1alpha1.MoverLogLimit))
			g.Expect(kept.Log).To(HaveSuffix(`"error":"bucket does not exist"}` + "\n"))
			g.Expect(kept.Log).To(HavePrefix(`{"level"`), "cut at a line boundary")
		}, timeout, interval).Should(Succeed())
		expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name}})
		Expect(podLogs.readsOf(ns, lookAlike.Name)).To(BeZero(), "a look-alike pod's log is not read")

		t.Run("and reads it once", func(t *testing.T) {
			RegisterTestingT(t)
			before := reconcileCount("echobackup")
			got := getBackup(Default, client.ObjectKeyFromObject(b))
			patch := client.MergeFrom(got.DeepCopy())
			metav1.SetMetaDataAnnotation(&got.ObjectMeta, "test.echo.dev/poke", "1")
			Expect(k8sClient.Patch(ctx, got, patch)).To(Succeed())
			Eventually(func() float64 { return reconcileCount("echobackup") }, timeout, interval).Should(BeNumerically(">", before))
			Expect(podLogs.readsOf(ns, job.Name+"-pod")).To(Equal(1))
		})
	})

	// The API server serves the log of a pod that no node runs as empty:
	// the real read ends in an empty log, once, and the outcome is
	// recorded all the same. (A node that does not answer is test/e2e's.)
	t.Run("through the API server, without a kubelet", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "no-kubelet", "journal")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		job := waitJob(t, ns, "no-kubelet-backup")
		finishMoverJob(t, job, `{"size":12,"checksum":"sha256:ab","location":"s3://echo-backups/x","files":1}`, true)
		Eventually(func(g Gomega) {
			got := getBackup(g, client.ObjectKeyFromObject(b))
			g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseCompleted))
			g.Expect(got.Status.MoverLog).NotTo(BeNil())
			g.Expect(got.Status.MoverLog.Pod).To(Equal(job.Name + "-pod"))
			g.Expect(got.Status.MoverLog.JobUID).To(Equal(job.UID))
			g.Expect(got.Status.MoverLog.Log).To(BeEmpty())
			g.Expect(got.Status.MoverLog.Unavailable).To(BeEmpty())
		}, timeout, interval).Should(Succeed())
		expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name}})
		Expect(podLogs.readsOf(ns, job.Name+"-pod")).To(Equal(1))
	})
}

// TestRestoreKeepsTheMoverLogOfItsLastJob: a restore keeps the log of its
// inspect Job once it finished, then that of its restore Job in its place;
// neither is read again once kept.
func TestRestoreKeepsTheMoverLogOfItsLastJob(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, "web", persistentEcho))
	rollOut(t, echoKey)
	storage := newBackup(ns, "unused", "unused").Spec.Storage
	rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{Storage: &storage, Key: "src/web/web-1"}, EchoName: "web"}}
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	key := client.ObjectKeyFromObject(rs)

	inspect := waitJob(t, ns, "r-inspect")
	podLogs.serve(ns, inspect.Name+"-pod", "inspect complete\n")
	finishMoverJob(t, inspect, inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
	Eventually(func(g Gomega) *echov1alpha1.MoverLog { return getRestore(g, key).Status.MoverLog }, timeout, interval).
		Should(And(Not(BeNil()), HaveField("Job", inspect.Name), HaveField("Log", "inspect complete\n")))
	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("r"))
	quiesce(t, echoKey)

	restore := waitJob(t, ns, "r-restore")
	podLogs.serve(ns, restore.Name+"-pod", "restore failed: target data directory is not empty\n")
	finishMoverJob(t, restore, `{"error":"target data directory is not empty: /data holds journal","reason":"TargetNotEmpty","retryable":false}`, false)
	waitRestoreFailed(t, key)
	got := getRestore(Default, key).Status.MoverLog
	Expect(got).NotTo(BeNil())
	Expect(got.Job).To(Equal(restore.Name))
	Expect(got.JobUID).To(Equal(restore.UID))
	Expect(got.Log).To(Equal("restore failed: target data directory is not empty\n"))
	expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: restore.Name}})
	// Once its log is in the status, a Job's log is not read again,
	// however often its outcome is looked at; a reconcile from a cache
	// that has not seen that status write yet may read it a second time.
	Expect(podLogs.readsOf(ns, inspect.Name+"-pod")).To(BeNumerically("<=", 2), "the inspect Job's log is not read on every reconcile")
	Expect(podLogs.readsOf(ns, restore.Name+"-pod")).To(BeNumerically("<=", 2))
}
