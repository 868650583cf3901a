package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// The tests below play the Job controller and the kubelet for the delete
// Jobs as finishMoverJob does for the backup Jobs, and the garbage
// collector where a test needs it: envtest runs neither.

const (
	deleteSucceeded = `{"location":"s3://echo-backups/somewhere"}`
	deleteRefused   = `{"error":"s3 delete s3://echo-backups/x/manifest.json: AccessDenied (HTTP 403): check the Secret s3-credentials","reason":"AccessDenied","retryable":false}`
)

func newDeleteBackup(ns, name, echo string) *echov1alpha1.EchoBackup {
	b := newBackup(ns, name, echo)
	b.Spec.DeletionPolicy = echov1alpha1.DeletionPolicyDelete
	return b
}

// completeBackup creates b, waits for its Job, finishes it successfully and
// waits for b to be Complete.
func completeBackup(t *testing.T, b *echov1alpha1.EchoBackup) {
	t.Helper()
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	job := waitJob(t, b.Namespace, b.Name+"-backup")
	finishMoverJob(t, job, `{"size":10,"checksum":"sha256:ab","location":"s3://echo-backups/`+b.Namespace+`/`+b.Spec.EchoName+`/`+b.Name+`","files":1}`, true)
	Eventually(func(g Gomega) {
		got := getBackup(g, client.ObjectKeyFromObject(b))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

func deleteBackup(t *testing.T, b *echov1alpha1.EchoBackup) {
	t.Helper()
	Expect(k8sClient.Delete(context.Background(), b)).To(Succeed())
}

// expectNoJob checks for a while that a Job does not appear.
func expectNoJob(t *testing.T, ns, name string) {
	t.Helper()
	Consistently(func() error {
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &batchv1.Job{})
	}, "1s", interval).ShouldNot(Succeed(), "Job %s/%s exists", ns, name)
}

// expectHeld checks for a while that a deleted EchoBackup stays.
func expectHeld(t *testing.T, b *echov1alpha1.EchoBackup) {
	t.Helper()
	Consistently(func(g Gomega) {
		got := getBackup(g, client.ObjectKeyFromObject(b))
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		g.Expect(got.Finalizers).To(ContainElement(echov1alpha1.ArtifactFinalizer))
	}, "1s", interval).Should(Succeed())
}

// eventMessages lists the notes of an object's Events of one reason.
func eventMessages(g Gomega, ns, name, reason string) []string {
	var out []string
	for _, ev := range objectEvents(g, ns, name) {
		if ev.Reason == reason {
			out = append(out, ev.Note)
		}
	}
	return out
}

// removePod plays the garbage collector for the pod finishMoverJob made
// for a Job that is gone.
func removePod(t *testing.T, job *batchv1.Job) {
	t.Helper()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-pod"}}
	Expect(k8sClient.Delete(context.Background(), pod, client.GracePeriodSeconds(0))).To(Succeed())
	expectGone(t, pod)
}

func TestEchoBackupRetainLeavesTheArtifact(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newBackup(ns, "kept-1", "journal")
	completeBackup(t, b)
	Expect(getBackup(Default, client.ObjectKeyFromObject(b)).Finalizers).To(BeEmpty(), "Retain needs no finalizer")

	deleteBackup(t, b)
	expectGone(t, b)
	expectNoJob(t, ns, "kept-1-delete")
}

func TestEchoBackupDeleteDeletesTheArtifactFirst(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newDeleteBackup(ns, "journal-1", "journal")
	completeBackup(t, b)
	Expect(getBackup(Default, client.ObjectKeyFromObject(b)).Finalizers).To(ConsistOf(echov1alpha1.ArtifactFinalizer))

	deleteBackup(t, b)
	job := waitJob(t, ns, "journal-1-delete")

	t.Run("the delete Job runs the operator's image on the backup's storage", func(t *testing.T) {
		RegisterTestingT(t)
		pod := job.Spec.Template.Spec
		c := pod.Containers[0]
		Expect(c.Image).To(Equal(testMoverImage))
		Expect(c.Args).To(HaveExactElements("delete", "--key="+ns+"/journal/journal-1",
			"--s3-endpoint=http://minio.storage.example.test:9000", "--s3-region=us-east-1", "--s3-bucket=echo-backups", "--s3-path-style"))
		env := storageEnv(Default, c.Env)
		Expect(env).To(HaveLen(2))
		for _, e := range env {
			Expect(e.Value).To(BeEmpty(), "%s: credentials travel only as Secret references", e.Name)
			Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("s3-credentials"))
		}
		Expect(pod.Volumes).NotTo(ContainElement(HaveField("Name", "data")))
		Expect(job.OwnerReferences).To(BeEmpty())
		Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
	})

	expectHeld(t, b)
	finishMoverJob(t, job, deleteSucceeded, true)
	expectGone(t, b)
	expectGone(t, job)
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, b.Name) }, timeout, interval).
		Should(ContainElements(echov1alpha1.EventReasonDeletingArtifact, echov1alpha1.EventReasonArtifactDeleted))

	t.Run("a delete Job left from an earlier EchoBackup of the same name does not count", func(t *testing.T) {
		RegisterTestingT(t)
		// Play the garbage collector for the pods of the first
		// EchoBackup's Jobs, and leave a delete Job as one whose removal
		// failed, still running: a finished one whose EchoBackup is gone
		// is removed before the next EchoBackup of its name comes.
		removePod(t, job)
		removePod(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-1-backup"}})
		stale := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-1-delete",
				Labels:      map[string]string{echov1alpha1.BackupLabel: "journal-1", chart.ManagedByLabel: echov1alpha1.ManagedBy},
				Annotations: map[string]string{echov1alpha1.BackupUIDAnnotation: "an-earlier-uid"}},
			Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "mover", Image: testMoverImage}}}}},
		}
		Expect(k8sClient.Create(ctx, stale)).To(Succeed())

		b2 := newDeleteBackup(ns, "journal-1", "journal")
		completeBackup(t, b2)
		deleteBackup(t, b2)
		// Its UID is not the one b2 records: the operator cannot tell it
		// from a Job someone else made, so it names it and leaves it, and
		// its success says nothing of b2's artifact.
		expectJobNotOwnedEvent(t, b2, stale.Name)
		finishMoverJob(t, stale, deleteSucceeded, true)
		expectHeld(t, b2)
		Expect(eventReasonsOf(Default, b2)).NotTo(ContainElement(echov1alpha1.EventReasonArtifactDeleted))
		expectUntouched(t, stale)

		Expect(k8sClient.Delete(ctx, stale, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		removePod(t, stale)
		var fresh *batchv1.Job
		Eventually(func(g Gomega) {
			fresh = &batchv1.Job{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stale), fresh)).To(Succeed())
			g.Expect(fresh.UID).NotTo(Equal(stale.UID))
		}, timeout, interval).Should(Succeed())
		Expect(fresh.Annotations).To(HaveKeyWithValue(echov1alpha1.BackupUIDAnnotation, string(getBackup(Default, client.ObjectKeyFromObject(b2)).UID)))
		expectHeld(t, b2)
		finishMoverJob(t, fresh, deleteSucceeded, true)
		expectGone(t, b2)
	})
}

func TestEchoBackupFailedArtifactDeletionIsRetried(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newDeleteBackup(ns, "flaky-1", "journal")
	completeBackup(t, b)
	deleteBackup(t, b)
	job := waitJob(t, ns, "flaky-1-delete")
	finishMoverJob(t, job, deleteRefused, false)

	Eventually(func(g Gomega) []string {
		return eventMessages(g, ns, b.Name, echov1alpha1.EventReasonArtifactDeleteFailed)
	}, timeout, interval).Should(ContainElement(ContainSubstring("check the Secret s3-credentials")))
	expectHeld(t, b)
	Expect(getJobUID(Default, job)).To(Equal(job.UID), "retried before the backoff")

	// A minute later (the failure is moved back in time), the failed Job
	// gives way to a new attempt.
	backdateJobFailure(t, job, 2*time.Minute)
	var retry *batchv1.Job
	Eventually(func(g Gomega) {
		retry = &batchv1.Job{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(job), retry)).To(Succeed())
		g.Expect(retry.UID).NotTo(Equal(job.UID))
	}, timeout, interval).Should(Succeed())
	expectHeld(t, b)

	removePod(t, job)
	finishMoverJob(t, retry, deleteSucceeded, true)
	expectGone(t, b)
}

func TestEchoBackupWithoutAnArtifactGoesAtOnce(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)

	t.Run("a backup that failed", func(t *testing.T) {
		RegisterTestingT(t)
		b := newDeleteBackup(ns, "ghost-1", "ghost")
		Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getBackup(g, client.ObjectKeyFromObject(b))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, echov1alpha1.BackupConditionFailed)).To(BeTrue())
			g.Expect(got.Finalizers).To(ContainElement(echov1alpha1.ArtifactFinalizer))
		}, timeout, interval).Should(Succeed())
		deleteBackup(t, b)
		expectGone(t, b)
		expectNoJob(t, ns, "ghost-1-delete")
	})

	t.Run("a running backup finishes first", func(t *testing.T) {
		RegisterTestingT(t)
		createEcho(t, newEcho(ns, "busy"))
		b := newDeleteBackup(ns, "busy-1", "busy")
		Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
		backupJob := waitJob(t, ns, "busy-1-backup")
		deleteBackup(t, b)
		expectHeld(t, b)
		expectNoJob(t, ns, "busy-1-delete")

		// It may yet store the artifact: it did, so the artifact goes.
		finishMoverJob(t, backupJob, `{"size":10,"checksum":"sha256:ab","location":"s3://echo-backups/`+ns+`/busy/busy-1","files":1}`, true)
		job := waitJob(t, ns, "busy-1-delete")
		Expect(meta.IsStatusConditionTrue(getBackup(Default, client.ObjectKeyFromObject(b)).Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeTrue())
		finishMoverJob(t, job, deleteSucceeded, true)
		expectGone(t, b)
	})

	t.Run("a running backup that fails", func(t *testing.T) {
		RegisterTestingT(t)
		b := newDeleteBackup(ns, "busy-2", "busy")
		Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
		backupJob := waitJob(t, ns, "busy-2-backup")
		deleteBackup(t, b)
		finishMoverJob(t, backupJob, `{"error":"no route to the storage","reason":"Unavailable","retryable":true}`, false)
		expectGone(t, b)
		expectNoJob(t, ns, "busy-2-delete")
	})
}

func TestEchoBackupInADeletedNamespaceLeavesTheArtifact(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echo := createEcho(t, newEcho(ns, "journal"))
	b := newDeleteBackup(ns, "last-1", "journal")
	completeBackup(t, b)
	// The Echo goes first, so that its release is not reconciled in a
	// namespace that refuses new objects.
	Expect(k8sClient.Delete(ctx, echo)).To(Succeed())
	expectGone(t, echo)

	// Nothing in envtest empties a namespace being deleted: it stays
	// Terminating, refusing new objects, and the test deletes the backup.
	Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	deleteBackup(t, b)
	expectGone(t, b)
	// The Event saying so cannot be stored in a namespace being deleted
	// either: the operator's log tells.
	expectNoJob(t, ns, "last-1-delete")
}

func getJobUID(g Gomega, job *batchv1.Job) types.UID {
	got := &batchv1.Job{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(job), got)).To(Succeed())
	return got.UID
}

// backdateJobFailure moves a failed Job's failure d into the past.
func backdateJobFailure(t *testing.T, job *batchv1.Job, d time.Duration) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &batchv1.Job{}
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(job), got); err != nil {
			return err
		}
		for i := range got.Status.Conditions {
			got.Status.Conditions[i].LastTransitionTime = metav1.NewTime(time.Now().Add(-d))
		}
		return k8sClient.Status().Update(context.Background(), got)
	})
	if err != nil {
		t.Fatalf("backdating the failure of Job %s: %v", job.Name, err)
	}
}
