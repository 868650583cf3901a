package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// A tenant with the namespace's edit role may create Jobs, under any name
// and with any labels: the tests below plant one under the deterministic
// name of a backup's, a restore's or an artifact deletion's Job before the
// operator creates its own, looking as the operator's would (its labels, a
// data mover container of the operator's image), even run to a successful
// end with the result the operator waits for. The operator must report no
// success, say which Job is in the way, and leave it alone.

// plantedJob is the Job a tenant creates under name: the operator's
// labels for owner (a backup's or a restore's), the operator's image and
// subcommand, and nothing controlling it.
func plantedJob(ns, name, echo, ownerLabel, ownerName, command string, labelled bool) *batchv1.Job {
	labels := map[string]string{chart.ManagedByLabel: echov1alpha1.ManagedBy, chart.InstanceLabel: echo, ownerLabel: ownerName}
	if !labelled {
		labels = map[string]string{"made-by": "tenant"}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To(int32(0)), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
				Name: "mover", Image: testMoverImage, Args: []string{command},
			}}},
		}},
	}
}

// plantJob creates a planted Job and, when succeeded, plays it to a
// successful end with result as its pod's termination message.
func plantJob(t *testing.T, job *batchv1.Job, result string) *batchv1.Job {
	t.Helper()
	Expect(k8sClient.Create(context.Background(), job)).To(Succeed())
	if result != "" {
		finishMoverJob(t, job, result, true)
	}
	Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(job), job)).To(Succeed())
	return job
}

// expectUntouched checks for a while that a planted Job is still there as
// it was made: not deleted, not adopted (its owner references are those
// the tenant wrote).
func expectUntouched(t *testing.T, planted *batchv1.Job) {
	t.Helper()
	Consistently(func(g Gomega) {
		got := &batchv1.Job{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(planted), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(planted.UID))
		g.Expect(got.DeletionTimestamp).To(BeNil(), "the planted Job is not deleted")
		g.Expect(got.OwnerReferences).To(Equal(planted.OwnerReferences), "the planted Job is not adopted")
	}, "1s", interval).Should(Succeed())
}

// expectJobNotOwnedEvent waits for the Warning Event JobNotOwned on obj,
// naming the planted Job and how to remove it.
func expectJobNotOwnedEvent(t *testing.T, obj client.Object, job string) {
	t.Helper()
	Eventually(func(g Gomega) {
		found := 0
		for _, ev := range objectEvents(g, obj.GetNamespace(), obj.GetName()) {
			if ev.Reason != echov1alpha1.EventReasonJobNotOwned {
				continue
			}
			found++
			g.Expect(ev).To(operatorEvent(obj, corev1.EventTypeWarning, echov1alpha1.EventReasonJobNotOwned))
			g.Expect(ev.Note).To(And(ContainSubstring("Job "+job+" in namespace "+obj.GetNamespace()),
				ContainSubstring("kubectl delete job -n "+obj.GetNamespace()+" "+job)))
		}
		g.Expect(found).To(BeNumerically(">", 0), "no Event %s", echov1alpha1.EventReasonJobNotOwned)
	}, timeout, interval).Should(Succeed())
}

// eventReasonsOf lists the reasons of the Events recorded for obj itself,
// not for an earlier object of its name.
func eventReasonsOf(g Gomega, obj client.Object) []string {
	var out []string
	for _, ev := range objectEvents(g, obj.GetNamespace(), obj.GetName()) {
		if ev.Regarding.UID == obj.GetUID() {
			out = append(out, ev.Reason)
		}
	}
	return out
}

func TestBackupRefusesAJobItDidNotCreate(t *testing.T) {
	for _, labelled := range []bool{true, false} {
		name := map[bool]string{true: "with the operator's labels", false: "unlabelled, which the cache does not hold"}[labelled]
		t.Run(name, func(t *testing.T) {
			RegisterTestingT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			createEcho(t, newEcho(ns, "journal"))
			planted := plantJob(t, plantedJob(ns, "b1-backup", "journal", echov1alpha1.BackupLabel, "b1", "backup", labelled),
				`{"size":1234,"checksum":"sha256:abcd","location":"s3://echo-backups/`+ns+`/journal/b1","files":2}`)

			b := newBackup(ns, "b1", "journal")
			Expect(k8sClient.Create(ctx, b)).To(Succeed())
			expectBackupRefusedJob(t, b, planted)
		})
	}
}

// expectBackupRefusedJob waits for the backup to fail for the planted Job,
// with nothing of the Job's report taken, and checks the Job is left as
// the tenant made it.
func expectBackupRefusedJob(t *testing.T, b *echov1alpha1.EchoBackup, planted *batchv1.Job) {
	t.Helper()
	c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
	Expect(c.Reason).To(Equal(echov1alpha1.ReasonJobNotOwned))
	Expect(c.Message).To(And(ContainSubstring("Job "+planted.Name+" in namespace "+b.Namespace), ContainSubstring("EchoBackup "+b.Name),
		ContainSubstring("kubectl delete job -n "+b.Namespace+" "+planted.Name)))
	got := getBackup(Default, client.ObjectKeyFromObject(b))
	Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeNil(), "no success is reported")
	Expect(got.Status.Location).To(BeEmpty())
	Expect(got.Status.Checksum).To(BeEmpty())
	Expect(got.Status.Jobs).To(BeEmpty(), "the planted Job is not recorded as the backup's")
	expectJobNotOwnedEvent(t, b, planted.Name)
	Expect(eventReasonsOf(Default, got)).NotTo(ContainElement(echov1alpha1.EventReasonBackupCompleted))
	expectUntouched(t, planted)
}

// TestBackupRecordsItsJob: the Job the operator creates is controlled by
// the backup, and its UID is in the backup's status.
func TestBackupRecordsItsJob(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newBackup(ns, "b1", "journal")
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	job := waitJob(t, ns, "b1-backup")
	Eventually(func(g Gomega) []echov1alpha1.JobReference {
		return getBackup(g, client.ObjectKeyFromObject(b)).Status.Jobs
	}, timeout, interval).Should(ConsistOf(echov1alpha1.JobReference{Name: "b1-backup", UID: job.UID}))
	Expect(metav1.IsControlledBy(job, getBackup(Default, client.ObjectKeyFromObject(b)))).To(BeTrue())
}

func TestArtifactDeletionRefusesAJobItDidNotCreate(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newDeleteBackup(ns, "b1", "journal")
	completeBackup(t, b)
	planted := plantedJob(ns, "b1-delete", "journal", echov1alpha1.BackupLabel, "b1", "delete", true)
	// What the operator's own delete Job carries, and what it trusted alone.
	planted.Annotations = map[string]string{echov1alpha1.BackupUIDAnnotation: string(getBackup(Default, client.ObjectKeyFromObject(b)).UID)}
	planted = plantJob(t, planted, deleteSucceeded)

	deleteBackup(t, b)
	expectJobNotOwnedEvent(t, b, "b1-delete")
	expectHeld(t, b)
	Expect(eventReasonsOf(Default, b)).NotTo(ContainElement(echov1alpha1.EventReasonArtifactDeleted))
	expectUntouched(t, planted)

	// Once the tenant's Job is gone, the operator deletes the artifact
	// with a Job of its own, and records it.
	Expect(k8sClient.Delete(ctx, planted, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	removePod(t, planted)
	Eventually(func(g Gomega) types.UID {
		got := &batchv1.Job{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "b1-delete"}, got)).To(Succeed())
		return got.UID
	}, timeout, interval).ShouldNot(Equal(planted.UID))
	job := waitJob(t, ns, "b1-delete")
	Eventually(func(g Gomega) []echov1alpha1.JobReference {
		return getBackup(g, client.ObjectKeyFromObject(b)).Status.Jobs
	}, timeout, interval).Should(ContainElement(echov1alpha1.JobReference{Name: "b1-delete", UID: job.UID}))
	finishMoverJob(t, job, deleteSucceeded, true)
	expectGone(t, b)
}

func TestRestoreRefusesAnInspectJobItDidNotCreate(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := rolledOutPersistentEcho(t, ns)
	completedBackup(t, ns, "web-1", "web")
	planted := plantJob(t, plantedJob(ns, "back-inspect", "web", echov1alpha1.RestoreLabel, "back", "inspect", true),
		inspectResult(`{"persistence":{"enabled":true}}`, 1))

	rs := replaceRestore(ns)
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	expectRestoreRefusedInspectJob(t, rs, planted, echoKey)
}

func TestRestoreRefusesARestoreJobItDidNotCreate(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := rolledOutPersistentEcho(t, ns)
	completedBackup(t, ns, "web-1", "web")
	// Still running: a restore Job of the restore's own is stopped before
	// the Echo is given back; this one is not the restore's to stop.
	planted := plantJob(t, plantedJob(ns, "back-restore", "web", echov1alpha1.RestoreLabel, "back", "restore", true), "")

	rs := replaceRestore(ns)
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	inspect := waitJob(t, ns, "back-inspect")
	finishMoverJob(t, inspect, inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("back"))
	quiesce(t, echoKey)

	expectRestoreRefusedRestoreJob(t, rs, inspect, planted, echoKey)
}

// rolledOutPersistentEcho is a Ready Echo "web" that keeps its data.
func rolledOutPersistentEcho(t *testing.T, ns string) types.NamespacedName {
	t.Helper()
	key := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, key.Name, persistentEcho))
	rollOut(t, key)
	return key
}

// replaceRestore restores backup web-1 into Echo web, replacing its data.
func replaceRestore(ns string) *echov1alpha1.EchoRestore {
	return &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "web-1"},
			ExistingData: echov1alpha1.ExistingDataReplace},
	}
}

// expectRestoreRefusedInspectJob waits for the restore to fail for the
// planted inspect Job: the Echo was never taken, no restore Job ran, and
// the Job is left as the tenant made it.
func expectRestoreRefusedInspectJob(t *testing.T, rs *echov1alpha1.EchoRestore, planted *batchv1.Job, echoKey types.NamespacedName) {
	t.Helper()
	key := client.ObjectKeyFromObject(rs)
	c := waitRestoreFailed(t, key)
	Expect(c.Reason).To(Equal(echov1alpha1.ReasonJobNotOwned))
	Expect(c.Message).To(And(ContainSubstring("Job "+planted.Name+" in namespace "+rs.Namespace), ContainSubstring("EchoRestore "+rs.Name)))
	Expect(holder(Default, echoKey)).To(BeEmpty(), "the Echo was never taken")
	expectNoJob(t, rs.Namespace, "back-restore")
	expectJobNotOwnedEvent(t, rs, planted.Name)
	Expect(getRestore(Default, key).Status.Jobs).To(BeEmpty())
	expectUntouched(t, planted)
}

// expectRestoreRefusedRestoreJob waits for the restore to fail for the
// planted restore Job, after its own inspect Job: no data is reported
// restored, the Echo is given back and the Job left as the tenant made it.
func expectRestoreRefusedRestoreJob(t *testing.T, rs *echov1alpha1.EchoRestore, inspect, planted *batchv1.Job, echoKey types.NamespacedName) {
	t.Helper()
	key := client.ObjectKeyFromObject(rs)
	c := waitRestoreFailed(t, key)
	Expect(c.Reason).To(Equal(echov1alpha1.ReasonJobNotOwned))
	Expect(c.Message).To(ContainSubstring("Job " + planted.Name + " in namespace " + rs.Namespace))
	got := getRestore(Default, key)
	Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.RestoreConditionDataRestored)).To(BeNil(), "no data is reported restored")
	Expect(got.Status.Jobs).To(ConsistOf(echov1alpha1.JobReference{Name: inspect.Name, UID: inspect.UID}),
		"the inspect Job, the restore's own, is recorded; the planted one is not")
	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(BeEmpty(), "the Echo is given back")
	expectJobNotOwnedEvent(t, rs, planted.Name)
	expectUntouched(t, planted)
}

func TestFinalBackupRefusesABackupItDidNotStart(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "precious"}
	echo := createEcho(t, newEcho(ns, key.Name, withFinalBackup))
	rollOut(t, key)

	// Made before the deletion, under the final backup's name and label:
	// a backup of that time, not of the Echo's last state.
	planted := newBackup(ns, key.Name+"-final-"+string(echo.UID)[:8], key.Name)
	planted.Labels = map[string]string{echov1alpha1.FinalBackupOfLabel: key.Name}
	completeBackup(t, planted)
	// Creation and deletion times are in seconds.
	Eventually(func() bool { return time.Now().After(planted.CreationTimestamp.Add(time.Second)) }, timeout, interval).Should(BeTrue())

	Expect(k8sClient.Delete(ctx, getEcho(Default, key))).To(Succeed())
	Eventually(func(g Gomega) []string {
		return eventMessages(g, ns, key.Name, echov1alpha1.EventReasonFinalBackupFailed)
	}, timeout, interval).Should(ContainElement(And(ContainSubstring("EchoBackup "+planted.Name),
		ContainSubstring("before the Echo's deletion began"), ContainSubstring("Delete that EchoBackup"))))
	Consistently(func(g Gomega) {
		g.Expect(getEcho(g, key).DeletionTimestamp).NotTo(BeNil())
		g.Expect(k8sClient.Get(ctx, key, &appsv1.Deployment{})).To(Succeed(), "nothing of the Echo goes: the uninstall gate agrees")
	}, "1s", interval).Should(Succeed())
	Expect(eventReasons(Default, ns, key.Name)).NotTo(ContainElement(echov1alpha1.EventReasonFinalBackupCompleted))

	// Once it is gone, the final backup runs, under the same name.
	Expect(k8sClient.Delete(ctx, planted)).To(Succeed())
	Eventually(func(g Gomega) types.UID { return finalBackupOf(t, key).UID }, timeout, interval).ShouldNot(Equal(planted.UID))
	b := finalBackupOf(t, key)
	Expect(b.CreationTimestamp.Before(getEcho(Default, key).DeletionTimestamp)).To(BeFalse())
	expectFinalBackupHolds(t, key)
	Eventually(func(g Gomega) []echov1alpha1.JobReference {
		return getBackup(g, client.ObjectKeyFromObject(&b)).Status.Jobs
	}, timeout, interval).Should(ConsistOf(HaveField("Name", b.Name+"-backup")))
}
