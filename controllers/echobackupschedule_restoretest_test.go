package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// A backup schedule that never runs by itself within a test (the next
// 29 February is years away): its backups are made by the tests.
const neverSchedule = "0 0 29 2 *"

// restoreTestEvery is the interval of the tests' restore tests.
const restoreTestEvery = 24 * time.Hour

// restoreTestSchedule is a schedule of Echo web whose restore test runs
// every restoreTestEvery.
func restoreTestSchedule(ns, name string) *echov1alpha1.EchoBackupSchedule {
	return &echov1alpha1.EchoBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: echov1alpha1.EchoBackupScheduleSpec{
			Schedule:    neverSchedule,
			RestoreTest: &echov1alpha1.RestoreTestSpec{Schedule: "@every 24h", Timeout: &metav1.Duration{Duration: 30 * time.Minute}},
			Template:    newBackup(ns, "unused", "web").Spec,
		},
	}
}

// scheduleBackup creates a backup of the schedule, as it would, and plays
// its Job to completion.
func scheduleBackup(t *testing.T, ns, schedule, name string) {
	t.Helper()
	b := newBackup(ns, name, "web")
	b.Labels = map[string]string{echov1alpha1.ScheduleLabel: schedule}
	completeBackup(t, b)
}

// restoreTests lists the EchoRestores of a schedule's restore tests.
func restoreTests(g Gomega, key types.NamespacedName) []echov1alpha1.EchoRestore {
	list := &echov1alpha1.EchoRestoreList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(key.Namespace),
		client.MatchingLabels{echov1alpha1.RestoreTestOfLabel: key.Name})).To(Succeed())
	return list.Items
}

// advanceToNextRestoreTest moves the clock past the schedule's next
// restore test, once the schedule has recorded when that is: the first
// test is due a period after the schedule begins testing, by its clock.
func advanceToNextRestoreTest(t *testing.T, key types.NamespacedName) {
	t.Helper()
	Eventually(func(g Gomega) *metav1.Time { return getSchedule(g, key).Status.NextRestoreTestTime }, timeout, interval).
		ShouldNot(BeNil(), "the schedule records when its next restore test is due")
	advanceAndPoke(t, &echov1alpha1.EchoBackupSchedule{}, key, restoreTestEvery+time.Second)
}

// startRestoreTest moves the clock to the next restore test and returns
// its EchoRestore.
func startRestoreTest(t *testing.T, key types.NamespacedName) echov1alpha1.EchoRestore {
	t.Helper()
	advanceToNextRestoreTest(t, key)
	var tests []echov1alpha1.EchoRestore
	Eventually(func(g Gomega) {
		tests = restoreTests(g, key)
		g.Expect(tests).To(HaveLen(1))
	}, timeout, interval).Should(Succeed())
	return tests[0]
}

// waitRestoreTestResult waits for the schedule to record the result of
// the restore test of EchoRestore restore, and for that test to be
// cleaned up.
func waitRestoreTestResult(t *testing.T, key types.NamespacedName, restore string) echov1alpha1.RestoreTestResult {
	t.Helper()
	var res echov1alpha1.RestoreTestResult
	Eventually(func(g Gomega) {
		last := getSchedule(g, key).Status.LastRestoreTest
		g.Expect(last).NotTo(BeNil())
		g.Expect(last.Restore).To(Equal(restore))
		res = *last
	}, timeout, interval).Should(Succeed())
	expectGone(t, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: restore}})
	return res
}

// sourceVersions are the resourceVersions of what a restore test must
// never touch: the source Echo's Service, claim and Deployment, and the
// Echo's generation and metadata.
func sourceVersions(g Gomega, ns string) map[string]string {
	ctx := context.Background()
	versions := map[string]string{}
	for kind, obj := range map[string]client.Object{
		"Service": &corev1.Service{}, "Deployment": &appsv1.Deployment{}, "PersistentVolumeClaim": &corev1.PersistentVolumeClaim{},
	} {
		name := "web"
		if kind == "PersistentVolumeClaim" {
			name = "web-data"
		}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj)).To(Succeed())
		versions[kind] = obj.GetResourceVersion()
	}
	echo := getEcho(g, types.NamespacedName{Namespace: ns, Name: "web"})
	versions["Echo generation"] = itoa(echo.Generation)
	versions["Echo annotations"] = mapString(echo.Annotations)
	versions["Echo labels"] = mapString(echo.Labels)
	return versions
}

func mapString(m map[string]string) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		s += k + "=" + m[k] + ";"
	}
	return s
}

// The restore test of a schedule restores its newest backup into a
// scratch Echo, records the outcome, cleans up, and never touches the
// source Echo.
func TestEchoBackupScheduleRestoreTest(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	sourceKey := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, "web", persistentEcho))
	rollOut(t, sourceKey)
	key := types.NamespacedName{Namespace: ns, Name: "nightly"}
	Expect(k8sClient.Create(ctx, restoreTestSchedule(ns, key.Name))).To(Succeed())
	scheduleBackup(t, ns, key.Name, "web-old")
	scheduleBackup(t, ns, key.Name, "web-new")
	source := sourceVersions(Default, ns)
	scratchKey := types.NamespacedName{Namespace: ns, Name: "web-restoretest"}

	Eventually(func(g Gomega) {
		s := getSchedule(g, key)
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, echov1alpha1.ScheduleConditionRestoreTestReady)).To(BeTrue())
		g.Expect(s.Status.NextRestoreTestTime).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	Expect(restoreTests(Default, key)).To(BeEmpty(), "nothing runs before the first run time")

	t.Run("a restore test that succeeds", func(t *testing.T) {
		RegisterTestingT(t)
		rs := startRestoreTest(t, key)
		Expect(rs.Spec.Source.BackupName).To(Equal(getSchedule(Default, key).Status.LastSuccessfulBackup), "the newest completed backup")
		Expect(rs.Spec.EchoName).To(Equal(scratchKey.Name))
		Expect(rs.Spec.Timeout.Duration).To(Equal(30 * time.Minute))
		Expect(metav1.IsControlledBy(&rs, getSchedule(Default, key))).To(BeTrue())

		finishMoverJob(t, waitJob(t, ns, rs.Name+"-inspect"), inspectResult(
			`{"replicas":1,"message":"backed up","persistence":{"enabled":true},"service":{"type":"LoadBalancer","port":8080},`+
				`"ingress":{"enabled":true,"host":"web.example.test"}}`, 2), true)
		Eventually(func(g Gomega) {
			e := getEcho(g, scratchKey)
			g.Expect(e.Labels).To(HaveKeyWithValue(echov1alpha1.RestoreTestOfLabel, key.Name))
			g.Expect(e.Spec.Message).To(Equal("backed up"))
			g.Expect(e.Spec.Ingress).To(BeNil(), "the scratch Echo is not exposed")
			g.Expect(e.Spec.Service.Type).To(Equal(echov1alpha1.ServiceType("ClusterIP")))
			g.Expect(e.Spec.Backup).To(BeNil(), "the scratch Echo takes no final backup")
			g.Expect(e.Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
			g.Expect(e.OwnerReferences).To(ContainElement(HaveField("Name", key.Name)))
		}, timeout, interval).Should(Succeed(), func() string { return moverOwners(ns) })
		quiesce(t, scratchKey)
		restore := waitJob(t, ns, rs.Name+"-restore")
		args := restore.Spec.Template.Spec.Containers[0].Args
		Expect(args).To(ContainElements("--verify", "--data-dir=/data"), "the mover reads the restored data back")
		Expect(restore.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("PersistentVolumeClaim.ClaimName", "web-restoretest-data")))
		for _, v := range restore.Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				Expect(v.PersistentVolumeClaim.ClaimName).NotTo(Equal("web-data"), "never the source's claim")
			}
		}
		finishMoverJob(t, restore, `{"size":2048,"checksum":"sha256:abcd","location":"s3://echo-backups/x","files":2,"verified":2}`, true)
		// As resume, without waiting to see the scratch Echo Ready: the
		// schedule deletes it as soon as it is.
		Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(k8sClient.Get(ctx, scratchKey, d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(HaveValue(BeNumerically(">", 0)))
		}, timeout, interval).Should(Succeed())
		Consistently(func(g Gomega) *echov1alpha1.RestoreTestResult {
			return getSchedule(g, key).Status.LastRestoreTest
		}, "300ms", interval).Should(BeNil(), "no outcome before the scratch Echo is Ready")
		markDeploymentAvailable(t, scratchKey)

		res := waitRestoreTestResult(t, key, rs.Name)
		Expect(res.Outcome).To(Equal(echov1alpha1.RestoreTestSucceeded))
		Expect(res.Reason).To(Equal(echov1alpha1.RestoreTestReasonVerified))
		Expect(res.Backup).To(Equal(rs.Spec.Source.BackupName))
		Expect(res.Message).To(ContainSubstring("2 files read back match the backup's manifest"))
		Expect(res.StartTime).NotTo(BeNil())
		Expect(res.Duration).NotTo(BeNil())
		s := getSchedule(Default, key)
		Expect(s.Status.LastSuccessfulRestoreTestTime).NotTo(BeNil())
		expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scratchKey.Name}})
		Eventually(func(g Gomega) {
			last := getEcho(g, sourceKey).Status.LastRestoreTest
			g.Expect(last).NotTo(BeNil(), "the Echo says how its last restore test went")
			g.Expect(last.Schedule).To(Equal(key.Name))
			g.Expect(last.Outcome).To(Equal(echov1alpha1.RestoreTestSucceeded))
			g.Expect(last.Restore).To(Equal(rs.Name))
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).Should(ContainElements(
			echov1alpha1.EventReasonRestoreTestStarted, echov1alpha1.EventReasonRestoreTestSucceeded))
	})

	t.Run("a restore test whose restore fails", func(t *testing.T) {
		RegisterTestingT(t)
		before := getSchedule(Default, key).Status.LastSuccessfulRestoreTestTime
		rs := startRestoreTest(t, key)
		finishMoverJob(t, waitJob(t, ns, rs.Name+"-inspect"), "", false)
		res := waitRestoreTestResult(t, key, rs.Name)
		Expect(res.Outcome).To(Equal(echov1alpha1.RestoreTestFailed))
		Expect(res.Reason).To(Equal(echov1alpha1.RestoreReasonJobFailed))
		Expect(res.Message).To(ContainSubstring("failed"))
		Expect(getSchedule(Default, key).Status.LastSuccessfulRestoreTestTime.Equal(before)).To(BeTrue(), "a failure keeps the last success")
		expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rs.Name + "-inspect"}})
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonRestoreTestFailed))
		Eventually(func(g Gomega) echov1alpha1.RestoreTestOutcome {
			return getEcho(g, sourceKey).Status.LastRestoreTest.Outcome
		}, timeout, interval).Should(Equal(echov1alpha1.RestoreTestFailed))
	})

	t.Run("a restore test past its timeout fails and is cleaned up", func(t *testing.T) {
		RegisterTestingT(t)
		rs := startRestoreTest(t, key)
		finishMoverJob(t, waitJob(t, ns, rs.Name+"-inspect"), inspectResult(`{"replicas":1,"persistence":{"enabled":true}}`, 2), true)
		Eventually(func(g Gomega) { getEcho(g, scratchKey) }, timeout, interval).Should(Succeed())
		Consistently(func(g Gomega) *echov1alpha1.RestoreTestResult {
			return getSchedule(g, key).Status.LastRestoreTest
		}, "300ms", interval).Should(HaveField("Restore", Not(Equal(rs.Name))), "no outcome before the deadline")
		advanceAndPoke(t, &echov1alpha1.EchoBackupSchedule{}, key, 31*time.Minute)
		res := waitRestoreTestResult(t, key, rs.Name)
		Expect(res.Outcome).To(Equal(echov1alpha1.RestoreTestFailed))
		Expect(res.Reason).To(Equal(echov1alpha1.RestoreTestReasonDeadlineExceeded))
		expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: scratchKey.Name}})
	})

	t.Run("the source Echo, its Service and its claim are never touched", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(sourceVersions(Default, ns)).To(Equal(source))
	})
}

// Without a completed backup a restore test is skipped; an Echo of the
// scratch name that no restore test created fails it, untouched.
func TestEchoBackupScheduleRestoreTestRefuses(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "web", persistentEcho))
	key := types.NamespacedName{Namespace: ns, Name: "nightly"}
	Expect(k8sClient.Create(ctx, restoreTestSchedule(ns, key.Name))).To(Succeed())

	t.Run("no completed backup: skipped", func(t *testing.T) {
		RegisterTestingT(t)
		advanceToNextRestoreTest(t, key)
		Eventually(func(g Gomega) {
			last := getSchedule(g, key).Status.LastRestoreTest
			g.Expect(last).NotTo(BeNil())
			g.Expect(last.Outcome).To(Equal(echov1alpha1.RestoreTestSkipped))
			g.Expect(last.Reason).To(Equal(echov1alpha1.RestoreTestReasonNoCompletedBackup))
		}, timeout, interval).Should(Succeed())
		Expect(restoreTests(Default, key)).To(BeEmpty())
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonRestoreTestSkipped))
	})

	t.Run("an Echo of the scratch name that is not a restore test's", func(t *testing.T) {
		RegisterTestingT(t)
		scheduleBackup(t, ns, key.Name, "web-1")
		squatter := createEcho(t, newEcho(ns, "web-restoretest", func(e *echov1alpha1.Echo) { e.Spec.Message = "mine" }))
		Eventually(func(g Gomega) { getEcho(g, client.ObjectKeyFromObject(squatter)) }, timeout, interval).Should(Succeed())
		advanceToNextRestoreTest(t, key)
		Eventually(func(g Gomega) {
			s := getSchedule(g, key)
			g.Expect(s.Status.LastRestoreTest).NotTo(BeNil())
			g.Expect(s.Status.LastRestoreTest.Reason).To(Equal(echov1alpha1.RestoreTestReasonScratchEchoTaken))
			g.Expect(s.Status.LastRestoreTest.Outcome).To(Equal(echov1alpha1.RestoreTestFailed))
			c := meta.FindStatusCondition(s.Status.Conditions, echov1alpha1.ScheduleConditionRestoreTestReady)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(echov1alpha1.ScheduleReasonScratchEchoTaken))
			g.Expect(c.Message).To(ContainSubstring("Rename or delete that Echo"))
		}, timeout, interval).Should(Succeed())
		Expect(restoreTests(Default, key)).To(BeEmpty())
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonScratchEchoTaken))
		e := getEcho(Default, client.ObjectKeyFromObject(squatter))
		Expect(e.DeletionTimestamp).To(BeNil())
		Expect(e.Spec.Message).To(Equal("mine"))
		Expect(e.Generation).To(BeEquivalentTo(1))

		Expect(k8sClient.Delete(ctx, e)).To(Succeed())
		expectGone(t, e)
		Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(getSchedule(g, key).Status.Conditions, echov1alpha1.ScheduleConditionRestoreTestReady)
		}, timeout, interval).Should(HaveField("Status", metav1.ConditionTrue), func() string {
			return fmt.Sprintf("tests can run again once the name is free: %+v", getSchedule(Default, key).Status)
		})
	})

	t.Run("an EchoRestore labelled as a restore test restores into no other Echo", func(t *testing.T) {
		RegisterTestingT(t)
		rs := &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sneaky", Labels: map[string]string{echov1alpha1.RestoreTestOfLabel: key.Name}},
			Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "web-1"}, EchoName: "web"},
		}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		finishMoverJob(t, waitJob(t, ns, "sneaky-inspect"), inspectResult(`{"replicas":1,"persistence":{"enabled":true}}`, 2), true)
		c := waitRestoreFailed(t, client.ObjectKeyFromObject(rs))
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreTestReasonScratchEchoTaken))
		Expect(getEcho(Default, types.NamespacedName{Namespace: ns, Name: "web"}).Annotations).NotTo(HaveKey(echov1alpha1.RestoreAnnotation))
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error { return k8sClient.Delete(ctx, rs) })).To(Succeed())
	})
}

// A restore test asked for with echo.dev/restore-test-now runs once per
// request, even while the schedule's restore tests are suspended, and
// leaves the cron's run times alone.
func TestEchoBackupScheduleRestoreTestOnRequest(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "web", persistentEcho))
	key := types.NamespacedName{Namespace: ns, Name: "nightly"}
	s := restoreTestSchedule(ns, key.Name)
	s.Spec.RestoreTest.Suspend = true
	Expect(k8sClient.Create(ctx, s)).To(Succeed())

	t.Run("without a completed backup the request is skipped", func(t *testing.T) {
		RegisterTestingT(t)
		requestRestoreTestNow(t, key, "1")
		Eventually(func(g Gomega) {
			s := getSchedule(g, key)
			g.Expect(s.Annotations).NotTo(HaveKey(echov1alpha1.RestoreTestNowAnnotation), "a request is honoured once")
			g.Expect(s.Status.LastRestoreTest).NotTo(BeNil())
			g.Expect(s.Status.LastRestoreTest.Outcome).To(Equal(echov1alpha1.RestoreTestSkipped))
			g.Expect(s.Status.LastRestoreTest.Reason).To(Equal(echov1alpha1.RestoreTestReasonNoCompletedBackup))
		}, timeout, interval).Should(Succeed())
		Expect(restoreTests(Default, key)).To(BeEmpty())
	})

	t.Run("a request tests the newest backup once", func(t *testing.T) {
		RegisterTestingT(t)
		scheduleBackup(t, ns, key.Name, "web-1")
		requestRestoreTestNow(t, key, "2")
		var rs echov1alpha1.EchoRestore
		Eventually(func(g Gomega) {
			tests := restoreTests(g, key)
			g.Expect(tests).To(HaveLen(1))
			rs = tests[0]
			g.Expect(getSchedule(g, key).Annotations).NotTo(HaveKey(echov1alpha1.RestoreTestNowAnnotation))
		}, timeout, interval).Should(Succeed())
		Expect(rs.Annotations).To(HaveKeyWithValue(echov1alpha1.RestoreTestRequestAnnotation, "2"))
		Expect(rs.Spec.Source.BackupName).To(Equal("web-1"))
		Expect(rs.Spec.Timeout.Duration).To(Equal(30*time.Minute), "the schedule's restoreTest.timeout")
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonRestoreTestRequested))

		finishMoverJob(t, waitJob(t, ns, rs.Name+"-inspect"), "", false)
		res := waitRestoreTestResult(t, key, rs.Name)
		Expect(res.Outcome).To(Equal(echov1alpha1.RestoreTestFailed))
		Consistently(func(g Gomega) []echov1alpha1.EchoRestore { return restoreTests(g, key) }, "500ms", interval).
			Should(BeEmpty(), "one test per request")
		s := getSchedule(Default, key)
		Expect(s.Status.LastRestoreTestScheduleTime).To(BeNil(), "the cron's run times are left alone")
		Expect(s.Status.NextRestoreTestTime).To(BeNil(), "the schedule's tests stay suspended")
	})
}

// requestRestoreTestNow asks a schedule for a restore test now, as the
// docs show: kubectl annotate echobackupschedule NAME
// echo.dev/restore-test-now=<time> --overwrite.
func requestRestoreTestNow(t *testing.T, key types.NamespacedName, value string) {
	t.Helper()
	annotateSchedule(t, key, echov1alpha1.RestoreTestNowAnnotation, value)
}
