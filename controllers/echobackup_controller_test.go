package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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

func newBackup(ns, name, echo string) *echov1alpha1.EchoBackup {
	return &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: echo, Storage: echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
			Bucket: "echo-backups", Endpoint: "http://minio.storage.example.test:9000", ForcePathStyle: true,
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials"},
		}}},
	}
}

func getBackup(g Gomega, key types.NamespacedName) *echov1alpha1.EchoBackup {
	b := &echov1alpha1.EchoBackup{}
	g.Expect(k8sClient.Get(context.Background(), key, b)).To(Succeed())
	return b
}

// finishMoverJob plays the Job controller and the kubelet: the Job's pod
// ends with the data mover's result as its termination message, and the
// Job is marked complete or failed.
func finishMoverJob(t *testing.T, job *batchv1.Job, result string, succeeded bool) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: job.Namespace, Name: job.Name + "-pod", Labels: job.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}},
		Spec: job.Spec.Template.Spec,
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	exit := int32(0)
	if !succeeded {
		exit = 1
	}
	now := metav1.Now()
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "mover", Image: pod.Spec.Containers[0].Image,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Message: result, FinishedAt: now}},
	}}}
	if !succeeded {
		pod.Status.Phase = corev1.PodFailed
	}
	Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())

	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())
	job.Status.StartTime = &now
	if succeeded {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	}
	Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
}

func waitJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	Eventually(func() error {
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, job)
	}, timeout, interval).Should(Succeed(), func() string { return "Job " + name + " never appeared; " + moverOwners(ns) })
	return job
}

// moverOwners tells what the backups and restores of a namespace say of
// themselves: why a Job they should have made is not there.
func moverOwners(ns string) string {
	ctx := context.Background()
	backups, restores := &echov1alpha1.EchoBackupList{}, &echov1alpha1.EchoRestoreList{}
	if err := k8sClient.List(ctx, backups, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	if err := k8sClient.List(ctx, restores, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	out := "in namespace " + ns + ":"
	for _, b := range backups.Items {
		out += fmt.Sprintf("\n  EchoBackup %s: finalizers %v, conditions %+v", b.Name, b.Finalizers, b.Status.Conditions)
	}
	for _, r := range restores.Items {
		out += fmt.Sprintf("\n  EchoRestore %s: finalizers %v, conditions %+v", r.Name, r.Finalizers, r.Status.Conditions)
	}
	return out
}

func TestEchoBackupRunsTheDataMoverAndReportsItsResult(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	createEcho(t, newEcho(ns, echoKey.Name, func(e *echov1alpha1.Echo) {
		e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true}
		e.Spec.Message = "remember me"
	}))
	echo := rollOut(t, echoKey)
	// Ready follows the Deployment, which Helm creates before it records
	// the release as deployed: the backup captures the release once it is.
	Eventually(func(g Gomega) metav1.ConditionStatus {
		return conditionStatus(getEcho(g, echoKey), echov1alpha1.EchoConditionDeployed)
	}, timeout, interval).Should(Equal(metav1.ConditionTrue))

	b := newBackup(ns, "journal-1", echoKey.Name)
	Expect(k8sClient.Create(ctx, b)).To(Succeed())
	job := waitJob(t, ns, "journal-1-backup")
	expectBackupPhase(t, client.ObjectKeyFromObject(b), echov1alpha1.PhaseRunning, echov1alpha1.BackupReasonBackingUp)

	t.Run("the Job runs the operator's image on the Echo's data", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(metav1.IsControlledBy(job, getBackup(Default, client.ObjectKeyFromObject(b)))).To(BeTrue())
		pod := job.Spec.Template.Spec
		c := pod.Containers[0]
		Expect(c.Image).To(Equal(testMoverImage))
		Expect(c.Args).To(ContainElements("backup", "--key="+ns+"/journal/journal-1", "--s3-bucket=echo-backups", "--s3-path-style", "--compression=gzip"))
		for _, e := range storageEnv(Default, c.Env) {
			Expect(e.Value).To(BeEmpty(), "%s: credentials travel only as Secret references", e.Name)
			Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("s3-credentials"))
		}
		Expect(pod.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", "journal-data")))
		Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(pod.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(HaveLen(1),
			"a ReadWriteOnce claim in use is only reachable beside the Echo's pods")
		Expect(*job.Spec.BackoffLimit).To(BeNumerically(">", 0))
		Expect(*job.Spec.ActiveDeadlineSeconds).To(BeNumerically(">", 0))
	})

	t.Run("the configuration travels in a ConfigMap", func(t *testing.T) {
		RegisterTestingT(t)
		cm := &corev1.ConfigMap{}
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "journal-1-config"}, cm)).To(Succeed())
		var cfg struct {
			Echo struct {
				Spec echov1alpha1.EchoSpec `json:"spec"`
			} `json:"echo"`
			Release struct {
				Chart        string         `json:"chart"`
				ChartVersion string         `json:"chartVersion"`
				Values       map[string]any `json:"values"`
			} `json:"release"`
		}
		Expect(json.Unmarshal([]byte(cm.Data["config.json"]), &cfg)).To(Succeed())
		Expect(cfg.Echo.Spec.Message).To(Equal("remember me"))
		Expect(cfg.Release.Chart).To(Equal("echo"))
		Expect(cfg.Release.ChartVersion).NotTo(BeEmpty())
		Expect(cfg.Release.Values).To(HaveKeyWithValue("message", "remember me"))
	})

	finishMoverJob(t, job, `{"size":1234,"checksum":"sha256:abcd","location":"s3://echo-backups/`+ns+`/journal/journal-1","files":2}`, true)
	Eventually(func(g Gomega) {
		got := getBackup(g, client.ObjectKeyFromObject(b))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeTrue())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionFailed)).To(BeNil())
		g.Expect(got.Status.Size).To(BeEquivalentTo(1234))
		g.Expect(got.Status.Checksum).To(Equal("sha256:abcd"))
		g.Expect(got.Status.Location).To(HaveSuffix("/journal/journal-1"))
		g.Expect(got.Status.EchoGeneration).To(Equal(echo.Generation))
		g.Expect(got.Status.StartTime).NotTo(BeNil())
		g.Expect(got.Status.CompletionTime).NotTo(BeNil())
		g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseCompleted))
		g.Expect(got.Status.Reason).To(Equal(echov1alpha1.BackupReasonCompleted))
	}, timeout, interval).Should(Succeed())
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, b.Name) }, timeout, interval).
		Should(ContainElements(echov1alpha1.EventReasonBackupStarted, echov1alpha1.EventReasonBackupCompleted))
	// Its pods would keep the Echo's claim from ever being deleted.
	expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: job.Name}})
}

func TestEchoBackupFailuresSayWhatToFix(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	t.Run("an Echo that does not exist", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "ghost-1", "ghost")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getBackup(g, client.ObjectKeyFromObject(b)).Status.Conditions, echov1alpha1.BackupConditionFailed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(echov1alpha1.BackupReasonEchoNotFound))
			g.Expect(c.Message).To(ContainSubstring(`Echo "ghost" does not exist`))
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, b.Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonBackupFailed))
		Consistently(func() error {
			return k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "ghost-1-backup"}, &batchv1.Job{})
		}, "500ms", interval).ShouldNot(Succeed(), "no Job runs for a missing Echo")
	})

	t.Run("storage that refuses the credentials", func(t *testing.T) {
		RegisterTestingT(t)
		createEcho(t, newEcho(ns, "locked"))
		b := newBackup(ns, "locked-1", "locked")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		job := waitJob(t, ns, "locked-1-backup")
		finishMoverJob(t, job, `{"error":"S3 refused the credentials: check the Secret s3-credentials","reason":"AccessDenied","retryable":false}`, false)
		Eventually(func(g Gomega) {
			got := getBackup(g, client.ObjectKeyFromObject(b))
			c := meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionFailed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(echov1alpha1.BackupReasonCredentialsError))
			g.Expect(got.Status.Error).To(ContainSubstring("check the Secret s3-credentials"))
			g.Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeNil())
			g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseFailed))
			g.Expect(got.Status.Reason).To(Equal(echov1alpha1.BackupReasonCredentialsError))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("names too long for a Job are shortened, deterministically", func(t *testing.T) {
		RegisterTestingT(t)
		createEcho(t, newEcho(ns, "long"))
		Expect(k8sClient.Create(ctx, newBackup(ns, "long-"+strings.Repeat("x", 70), "long"))).
			To(MatchError(ContainSubstring("an EchoBackup name is at most 63 characters")))
		name := "long-" + strings.Repeat("x", 58)
		Expect(k8sClient.Create(ctx, newBackup(ns, name, "long"))).To(Succeed())
		Eventually(func(g Gomega) {
			jobs := &batchv1.JobList{}
			g.Expect(k8sClient.List(ctx, jobs, client.InNamespace(ns), client.MatchingLabels{echov1alpha1.BackupLabel: name})).To(Succeed())
			g.Expect(jobs.Items).To(HaveLen(1))
			g.Expect(len(jobs.Items[0].Name)).To(BeNumerically("<=", 63))
			g.Expect(jobs.Items[0].Name).To(HaveSuffix("-backup"))
		}, timeout, interval).Should(Succeed())
	})
}

// TestEchoBackupWaitsForARestore: a backup of an Echo an EchoRestore is
// writing waits, saying why, and starts once the Echo is given back.
func TestEchoBackupWaitsForARestore(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "held"}
	// The hold names an EchoRestore that exists (an orphaned hold would be
	// released) and never touches this Echo.
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "never"}}})).To(Succeed())
	createEcho(t, newEcho(ns, echoKey.Name, func(e *echov1alpha1.Echo) {
		e.Annotations = map[string]string{echov1alpha1.RestoreAnnotation: "back"}
	}))

	b := newBackup(ns, "held-1", echoKey.Name)
	Expect(k8sClient.Create(ctx, b)).To(Succeed())
	key := client.ObjectKeyFromObject(b)
	Eventually(func(g Gomega) string {
		c := meta.FindStatusCondition(getBackup(g, key).Status.Conditions, echov1alpha1.BackupConditionComplete)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("EchoRestore back"))
		return c.Reason
	}, timeout, interval).Should(Equal(echov1alpha1.BackupReasonWaitingForRestore))
	expectBackupPhase(t, key, echov1alpha1.PhasePending, echov1alpha1.BackupReasonWaitingForRestore)
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "held-1-backup"}, &batchv1.Job{})).NotTo(Succeed(),
		"no backup Job runs while the data is being restored")

	updateEcho(t, echoKey, func(e *echov1alpha1.Echo) { delete(e.Annotations, echov1alpha1.RestoreAnnotation) })
	waitJob(t, ns, "held-1-backup")
	expectBackupPhase(t, key, echov1alpha1.PhaseRunning, echov1alpha1.BackupReasonBackingUp)
}

// expectBackupPhase waits for the backup's phase and reason, the columns
// `kubectl get echobackups` prints.
func expectBackupPhase(t *testing.T, key types.NamespacedName, phase echov1alpha1.Phase, reason string) {
	t.Helper()
	Eventually(func(g Gomega) []string {
		got := getBackup(g, key)
		return []string{string(got.Status.Phase), got.Status.Reason}
	}, timeout, interval).Should(Equal([]string{string(phase), reason}))
}
