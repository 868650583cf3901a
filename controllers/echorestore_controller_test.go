package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

func getRestore(g Gomega, key types.NamespacedName) *echov1alpha1.EchoRestore {
	rs := &echov1alpha1.EchoRestore{}
	g.Expect(k8sClient.Get(context.Background(), key, rs)).To(Succeed())
	return rs
}

// inspectResult is what the inspect subcommand reports for a backup of an
// Echo with the given spec (JSON) holding dataFiles data files.
func inspectResult(spec string, dataFiles int) string {
	return fmt.Sprintf(`{"location":"s3://echo-backups/src/web/web-1","source":{"namespace":"src","name":"web","uid":"u1","generation":3},`+
		`"createdAt":"2026-11-01T00:00:00Z","files":%d,"dataFiles":%d,"size":2048,`+
		`"echo":{"apiVersion":"echo.dev/v1alpha1","kind":"Echo","metadata":{"name":"web","namespace":"src","labels":{"team":"blue"},`+
		`"annotations":{"echo.dev/pause-reconcile":"true","note":"kept"}},"spec":%s}}`, dataFiles+1, dataFiles, spec)
}

const restoredData = `{"size":2048,"checksum":"sha256:abcd","location":"s3://echo-backups/src/web/web-1","files":2}`

// waitRestoreReason waits for the restore's Complete condition to show a step.
func waitRestoreReason(t *testing.T, key types.NamespacedName, reason string) *echov1alpha1.EchoRestore {
	t.Helper()
	var rs *echov1alpha1.EchoRestore
	Eventually(func(g Gomega) string {
		rs = getRestore(g, key)
		c := meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete)
		g.Expect(c).NotTo(BeNil())
		return c.Reason
	}, timeout, interval).Should(Equal(reason))
	return rs
}

// waitRestoreFailed waits for the restore to fail and returns its Failed condition.
func waitRestoreFailed(t *testing.T, key types.NamespacedName) metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	Eventually(func(g Gomega) {
		rs := getRestore(g, key)
		c = meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)
		g.Expect(c).NotTo(BeNil())
		g.Expect(rs.Status.Phase).To(Equal(echov1alpha1.PhaseFailed))
		g.Expect(rs.Status.Reason).To(Equal(c.Reason))
	}, timeout, interval).Should(Succeed())
	return *c
}

// quiesce plays the Deployment controller for a quiesced Echo: it waits
// for the release to ask for zero pods and reports none running.
func quiesce(t *testing.T, key types.NamespacedName) {
	t.Helper()
	Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(context.Background(), key, d)).To(Succeed())
		g.Expect(d.Spec.Replicas).To(HaveValue(BeZero()))
	}, timeout, interval).Should(Succeed())
	markDeploymentAvailable(t, key)
}

// resume plays the Deployment controller for an Echo given back: it waits
// for the release to ask for pods again, reports them available and waits
// for the Echo to be Ready.
func resume(t *testing.T, key types.NamespacedName) {
	t.Helper()
	Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(context.Background(), key, d)).To(Succeed())
		g.Expect(d.Spec.Replicas).To(HaveValue(BeNumerically(">", 0)))
	}, timeout, interval).Should(Succeed())
	markDeploymentAvailable(t, key)
	waitReady(t, key)
}

func holder(g Gomega, key types.NamespacedName) string {
	return getEcho(g, key).Annotations[echov1alpha1.RestoreAnnotation]
}

func TestEchoRestoreCreatesAnEchoFromABareArtifact(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	storage := newBackup(ns, "unused", "unused").Spec.Storage
	rs := &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dr"},
		Spec: echov1alpha1.EchoRestoreSpec{
			Source:   echov1alpha1.RestoreSource{Storage: &storage, Key: "src/web/web-1"},
			EchoName: "web-restored",
		},
	}
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	key, echoKey := client.ObjectKeyFromObject(rs), types.NamespacedName{Namespace: ns, Name: "web-restored"}

	inspect := waitJob(t, ns, "dr-inspect")
	Expect(inspect.Spec.Template.Spec.Containers[0].Args).To(ContainElements("inspect", "--key=src/web/web-1", "--s3-bucket=echo-backups"))
	Expect(metav1.IsControlledBy(inspect, getRestore(Default, key))).To(BeTrue())
	Expect(getRestore(Default, key).Finalizers).To(ContainElement(echov1alpha1.RestoreFinalizer))
	finishMoverJob(t, inspect, inspectResult(`{"replicas":1,"message":"from the backup","persistence":{"enabled":true}}`, 1), true)

	t.Run("the Echo is created quiesced from the backed-up configuration", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) {
			e := getEcho(g, echoKey)
			g.Expect(e.Spec.Message).To(Equal("from the backup"))
			g.Expect(e.Labels).To(HaveKeyWithValue("team", "blue"))
			g.Expect(e.Annotations).To(HaveKeyWithValue("note", "kept"))
			g.Expect(e.Annotations).NotTo(HaveKey("echo.dev/pause-reconcile"), "a paused release would never restore")
			g.Expect(e.Annotations).To(HaveKeyWithValue(echov1alpha1.RestoreAnnotation, "dr"))
			g.Expect(e.Annotations).To(HaveKeyWithValue(echov1alpha1.RestoredFromAnnotation, "s3://echo-backups/src/web/web-1"))
			g.Expect(e.OwnerReferences).To(BeEmpty(), "the Echo outlives its restore")
		}, timeout, interval).Should(Succeed())
		quiesce(t, echoKey)
		Eventually(func(g Gomega) string { return readyCondition(getEcho(g, echoKey)).Reason }, timeout, interval).
			Should(Equal(echov1alpha1.EchoReasonRestoring))
	})

	restore := waitJob(t, ns, "dr-restore")
	t.Run("the restore Job writes into the Echo's claim", func(t *testing.T) {
		RegisterTestingT(t)
		pod := restore.Spec.Template.Spec
		Expect(pod.Containers[0].Args).To(ContainElements("restore", "--key=src/web/web-1", "--existing-data=Fail", "--data-dir=/data"))
		Expect(pod.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", "web-restored-data")))
		for _, v := range pod.Volumes {
			if v.PersistentVolumeClaim != nil {
				Expect(v.PersistentVolumeClaim.ReadOnly).To(BeFalse(), "the restore writes into the claim")
			}
		}
		Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(*pod.Containers[0].SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(getRestore(Default, key).Status.EchoCreated).To(BeTrue())
	})
	finishMoverJob(t, restore, restoredData, true)

	t.Run("the Echo is given back and the restore completes when it is Ready", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(BeEmpty())
		rs := waitRestoreReason(t, key, echov1alpha1.RestoreReasonWaitingForEcho)
		Expect(meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionDataRestored)).To(BeTrue())
		Consistently(func(g Gomega) bool { return restoreFinishedNow(g, key) }, "300ms", interval).Should(BeFalse(),
			"the Echo runs no pod yet")
		resume(t, echoKey)
		rs = waitRestoreReason(t, key, echov1alpha1.RestoreReasonCompleted)
		Expect(rs.Status.RestoredFrom).To(Equal("s3://echo-backups/src/web/web-1"))
		Expect(rs.Status.CompletionTime).NotTo(BeNil())
		Expect(meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)).To(BeNil())
		expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dr-restore"}})
		Eventually(func(g Gomega) []string { return getRestore(g, key).Finalizers }, timeout, interval).Should(BeEmpty())
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, "dr") }, timeout, interval).Should(ContainElements(
			echov1alpha1.EventReasonRestoreStarted, echov1alpha1.EventReasonEchoCreated,
			echov1alpha1.EventReasonDataRestored, echov1alpha1.EventReasonRestoreCompleted))
	})
}

func restoreFinishedNow(g Gomega, key types.NamespacedName) bool {
	rs := getRestore(g, key)
	return meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionComplete) ||
		meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)
}

// completedBackup creates an EchoBackup and plays its Job to completion.
func completedBackup(t *testing.T, ns, name, echo string) {
	t.Helper()
	b := newBackup(ns, name, echo)
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	finishMoverJob(t, waitJob(t, ns, name+"-backup"),
		`{"size":10,"checksum":"sha256:ab","location":"s3://echo-backups/`+ns+`/`+echo+`/`+name+`","files":1}`, true)
	Eventually(func(g Gomega) bool {
		return meta.IsStatusConditionTrue(getBackup(g, client.ObjectKeyFromObject(b)).Status.Conditions, echov1alpha1.BackupConditionComplete)
	}, timeout, interval).Should(BeTrue())
}

func persistentEcho(e *echov1alpha1.Echo) {
	e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true}
}

func TestEchoRestoreInPlace(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, "web", persistentEcho, func(e *echov1alpha1.Echo) { e.Spec.Message = "live" }))
	rollOut(t, echoKey)
	completedBackup(t, ns, "web-1", "web")

	rs := &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "web-1"},
			ExistingData: echov1alpha1.ExistingDataReplace},
	}
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	key := client.ObjectKeyFromObject(rs)
	inspect := waitJob(t, ns, "back-inspect")
	Expect(inspect.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--key=" + ns + "/web/web-1"))
	Consistently(func(g Gomega) string { return holder(g, echoKey) }, "300ms", interval).Should(BeEmpty(),
		"the Echo serves while the backup is checked")
	finishMoverJob(t, inspect, inspectResult(`{"message":"old","persistence":{"enabled":true}}`, 1), true)

	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("back"))
	Expect(getRestore(Default, key).Status.EchoName).To(Equal("web"))
	quiescing := waitRestoreReason(t, key, echov1alpha1.RestoreReasonQuiescing)
	Expect([]any{quiescing.Status.Phase, quiescing.Status.Reason}).To(Equal([]any{echov1alpha1.PhaseRunning, echov1alpha1.RestoreReasonQuiescing}))
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "back-restore"}, &batchv1.Job{})).NotTo(Succeed(),
		"no data is written while the Echo runs")
	// A pod shutting down is no longer counted by its Deployment, but may
	// still write: the restore waits for it to be gone.
	lingering := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-old", Finalizers: []string{"example.test/shutting-down"},
			Labels: chart.SelectorLabels("web")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "echo", Image: "example.test/echo"}}},
	}
	Expect(k8sClient.Create(ctx, lingering)).To(Succeed())
	Expect(k8sClient.Delete(ctx, lingering)).To(Succeed())
	quiesce(t, echoKey)
	Eventually(func(g Gomega) string {
		c := meta.FindStatusCondition(getRestore(g, key).Status.Conditions, echov1alpha1.RestoreConditionComplete)
		g.Expect(c).NotTo(BeNil())
		return c.Message
	}, timeout, interval).Should(ContainSubstring("pods of Echo web to shut down"))
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "back-restore"}, &batchv1.Job{})).NotTo(Succeed())
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(lingering), lingering)).To(Succeed())
	lingering.Finalizers = nil
	Expect(k8sClient.Update(ctx, lingering)).To(Succeed())
	restore := waitJob(t, ns, "back-restore")
	Expect(restore.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--existing-data=Replace"))
	finishMoverJob(t, restore, restoredData, true)
	Eventually(func(g Gomega) []echov1alpha1.JobReference { return getRestore(g, key).Status.Jobs }, timeout, interval).Should(ConsistOf(
		echov1alpha1.JobReference{Name: "back-inspect", UID: inspect.UID}, echov1alpha1.JobReference{Name: "back-restore", UID: restore.UID}),
		"the restore records the Jobs it created")

	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(BeEmpty())
	// Once the data is in place the backup is no longer needed: a schedule
	// pruning it then does not fail the restore.
	Expect(k8sClient.Delete(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1"}})).To(Succeed())
	expectGone(t, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1"}})
	resume(t, echoKey)
	got := waitRestoreReason(t, key, echov1alpha1.RestoreReasonCompleted)
	Expect([]any{got.Status.Phase, got.Status.Reason}).To(Equal([]any{echov1alpha1.PhaseCompleted, echov1alpha1.RestoreReasonCompleted}))
	Expect(got.Status.EchoCreated).To(BeFalse())
	Expect(getEcho(Default, echoKey).Spec.Message).To(Equal("live"), "an in-place restore restores the data, not the spec")
}

func TestEchoRestoreFailuresGiveTheEchoBack(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	storage := newBackup(ns, "unused", "unused").Spec.Storage
	echoKey := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, "web", persistentEcho))
	rollOut(t, echoKey)
	createEcho(t, newEcho(ns, "plain"))
	rollOut(t, types.NamespacedName{Namespace: ns, Name: "plain"})

	newRestore := func(name, echo string) types.NamespacedName {
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{Storage: &storage, Key: "src/web/web-1"}, EchoName: echo}}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		return client.ObjectKeyFromObject(rs)
	}

	t.Run("a missing EchoBackup", func(t *testing.T) {
		RegisterTestingT(t)
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nobackup"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "never"}}}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		c := waitRestoreFailed(t, client.ObjectKeyFromObject(rs))
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonBackupNotFound))
		Expect(c.Message).To(ContainSubstring(`EchoBackup "never" does not exist`))
	})

	t.Run("a corrupted artifact fails before the Echo is touched", func(t *testing.T) {
		RegisterTestingT(t)
		key := newRestore("corrupt", "web")
		finishMoverJob(t, waitJob(t, ns, "corrupt-inspect"),
			`{"error":"corrupt archive: manifest: unexpected end of JSON input","reason":"CorruptArchive","retryable":false}`, false)
		c := waitRestoreFailed(t, key)
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonVerifyFailed))
		Expect(c.Message).To(ContainSubstring("corrupt archive"))
		Expect(holder(Default, echoKey)).To(BeEmpty())
		Expect(readyCondition(getEcho(Default, echoKey)).Status).To(Equal(metav1.ConditionTrue))
	})

	t.Run("data in the target is kept and the Echo given back", func(t *testing.T) {
		RegisterTestingT(t)
		key := newRestore("occupied", "web")
		finishMoverJob(t, waitJob(t, ns, "occupied-inspect"), inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
		Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("occupied"))
		quiesce(t, echoKey)
		finishMoverJob(t, waitJob(t, ns, "occupied-restore"),
			`{"error":"target data directory is not empty: /data holds journal","reason":"TargetNotEmpty","retryable":false}`, false)
		c := waitRestoreFailed(t, key)
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonTargetHasData))
		Expect(c.Message).To(ContainSubstring("existingData: Replace"))
		Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(BeEmpty())
		resume(t, echoKey)
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, "occupied") }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonRestoreFailed))
	})

	t.Run("an Echo too large to hand back cannot be created, only restored in place", func(t *testing.T) {
		RegisterTestingT(t)
		key := newRestore("huge", "absent")
		finishMoverJob(t, waitJob(t, ns, "huge-inspect"),
			`{"location":"s3://echo-backups/src/web/web-1","files":2,"dataFiles":1,"size":10,"echoOmitted":true}`, true)
		c := waitRestoreFailed(t, key)
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonInvalidConfig))
		Expect(c.Message).To(ContainSubstring("restore into it in place"))
	})

	t.Run("data cannot go into an Echo without a volume", func(t *testing.T) {
		RegisterTestingT(t)
		key := newRestore("novolume", "plain")
		finishMoverJob(t, waitJob(t, ns, "novolume-inspect"), inspectResult(`{"persistence":{"enabled":true}}`, 3), true)
		c := waitRestoreFailed(t, key)
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonNoVolume))
		Expect(c.Message).To(ContainSubstring("enable spec.persistence"))
		Expect(holder(Default, types.NamespacedName{Namespace: ns, Name: "plain"})).To(BeEmpty())
	})

	t.Run("a second restore waits for the first, and deleting one gives the Echo back", func(t *testing.T) {
		RegisterTestingT(t)
		first, second := newRestore("first", "web"), newRestore("second", "web")
		finishMoverJob(t, waitJob(t, ns, "first-inspect"), inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
		Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("first"))
		finishMoverJob(t, waitJob(t, ns, "second-inspect"), inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
		waitRestoreReason(t, second, echov1alpha1.RestoreReasonWaitingForRestore)

		Expect(k8sClient.Delete(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first.Name}})).To(Succeed())
		expectGone(t, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: first.Name}})
		Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("second"))
		Expect(k8sClient.Delete(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: second.Name}})).To(Succeed())
		Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(BeEmpty())
	})

	t.Run("the spec is immutable", func(t *testing.T) {
		RegisterTestingT(t)
		rs := getRestore(Default, types.NamespacedName{Namespace: ns, Name: "corrupt"})
		rs.Spec.ExistingData = echov1alpha1.ExistingDataReplace
		err := k8sClient.Update(ctx, rs)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("immutable"))
	})
}

// TestOrphanedRestoreHoldIsReleased: an Echo held by an EchoRestore that
// does not exist (its finalizer removed by hand, or the annotation set by
// hand) is given back, with a Warning Event; a hold by an existing restore
// stays.
func TestOrphanedRestoreHoldIsReleased(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alive"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "never"}}})).To(Succeed())
	orphan := types.NamespacedName{Namespace: ns, Name: "orphan"}
	kept := types.NamespacedName{Namespace: ns, Name: "kept"}
	createEcho(t, newEcho(ns, kept.Name, func(e *echov1alpha1.Echo) {
		e.Annotations = map[string]string{echov1alpha1.RestoreAnnotation: "alive"}
	}))
	createEcho(t, newEcho(ns, orphan.Name, func(e *echov1alpha1.Echo) {
		e.Annotations = map[string]string{echov1alpha1.RestoreAnnotation: "gone"}
	}))

	Eventually(func(g Gomega) string { return holder(g, orphan) }, timeout, interval).Should(BeEmpty())
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, orphan.Name) }, timeout, interval).
		Should(ContainElement(echov1alpha1.EventReasonRestoreHoldReleased))
	Consistently(func(g Gomega) string { return holder(g, kept) }, "500ms", interval).Should(Equal("alive"),
		"the hold of an existing restore is not touched")
}

// restoreWritingData starts a restore of the persistent Echo echoKey and
// brings it to the step where its restore Job writes the data.
func restoreWritingData(t *testing.T, echoKey types.NamespacedName, name string, deadline *metav1.Duration) (types.NamespacedName, *batchv1.Job) {
	t.Helper()
	rs := &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: echoKey.Namespace, Name: name},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "web-1"},
			ExistingData: echov1alpha1.ExistingDataReplace, Timeout: deadline},
	}
	Expect(k8sClient.Create(context.Background(), rs)).To(Succeed())
	key := client.ObjectKeyFromObject(rs)
	finishMoverJob(t, waitJob(t, key.Namespace, name+"-inspect"), inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal(name))
	quiesce(t, echoKey)
	job := waitJob(t, key.Namespace, name+"-restore")
	waitRestoreReason(t, key, echov1alpha1.RestoreReasonRestoringData)
	return key, job
}

// playGarbageCollector finishes the foreground deletion of a Job whose
// pods are gone, as the garbage collector would (envtest runs none), once
// it has been asked for.
func playGarbageCollector(t *testing.T, job *batchv1.Job) {
	t.Helper()
	ctx := context.Background()
	Eventually(func(g Gomega) {
		got := &batchv1.Job{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil(), "the restore Job is being deleted")
		g.Expect(got.Finalizers).To(ContainElement(metav1.FinalizerDeleteDependents), "its pods go first")
		got.Finalizers = nil
		g.Expect(k8sClient.Update(ctx, got)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	expectGone(t, job)
}

// A restore that ends while its restore Job may still write (past its
// deadline, or deleted) gives the Echo back only once that Job and its
// pods are gone: an Echo serving while the old pod still writes its data
// could lose writes or serve half-restored data.
func TestEchoRestoreStopsItsJobBeforeGivingTheEchoBack(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, "web", persistentEcho))
	rollOut(t, echoKey)
	completedBackup(t, ns, "web-1", "web")

	t.Run("past spec.timeout", func(t *testing.T) {
		RegisterTestingT(t)
		key, job := restoreWritingData(t, echoKey, "slow", &metav1.Duration{Duration: 5 * time.Minute})
		Expect(*job.Spec.ActiveDeadlineSeconds).To(BeEquivalentTo(300), "the Job never outlives its restore")
		Expect(getRestore(Default, key).Status.Conditions).NotTo(ContainElement(
			HaveField("Type", echov1alpha1.RestoreConditionFailed)), "not failed before its deadline")

		advanceAndPoke(t, &echov1alpha1.EchoRestore{}, key, 6*time.Minute)
		c := waitRestoreFailed(t, key)
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonDeadlineExceeded))
		Expect(c.Message).To(And(ContainSubstring("spec.timeout (5m0s)"), ContainSubstring("RestoringData")))
		Consistently(func(g Gomega) string { return holder(g, echoKey) }, "500ms", interval).Should(Equal("slow"),
			"the Echo is held while the restore pod may still write")

		playGarbageCollector(t, job)
		Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(BeEmpty())
		Eventually(func(g Gomega) []string { return getRestore(g, key).Finalizers }, timeout, interval).Should(BeEmpty())
		resume(t, echoKey)
	})

	t.Run("deleted while writing", func(t *testing.T) {
		RegisterTestingT(t)
		key, job := restoreWritingData(t, echoKey, "dropped", nil)
		Expect(*job.Spec.ActiveDeadlineSeconds).To(BeEquivalentTo(echov1alpha1.DefaultRestoreTimeout.Seconds()))
		Expect(k8sClient.Delete(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
		Consistently(func(g Gomega) string { return holder(g, echoKey) }, "500ms", interval).Should(Equal("dropped"),
			"the Echo is held while the restore pod may still write")

		playGarbageCollector(t, job)
		expectGone(t, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
		Expect(holder(Default, echoKey)).To(BeEmpty())
	})
}
