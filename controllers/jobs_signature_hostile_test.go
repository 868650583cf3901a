package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// The API server guards only blockOwnerDeletion in an owner reference: a
// tenant who can read a backup or restore (and so its UID) can create a
// Job whose controller reference names it, under the name of its Job,
// before the operator creates its own. The tests below plant such a Job
// under each deterministic name; only the operator's signature, which no
// tenant can make, tells its Jobs from these. And the operator's own Job,
// whose record in status is lost, is still taken by its signature.

// forgeController writes, as a tenant can, a controller reference naming
// owner (of kind) into job.
func forgeController(job *batchv1.Job, owner client.Object, kind string) *batchv1.Job {
	job.OwnerReferences = []metav1.OwnerReference{{APIVersion: echov1alpha1.GroupVersion.String(), Kind: kind,
		Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true)}}
	return job
}

// loseJobRecords clears the record of obj's Jobs in its status (an
// EchoBackup or an EchoRestore), as a status write lost after the
// operator created a Job leaves it.
func loseJobRecords(t *testing.T, obj client.Object) {
	t.Helper()
	Eventually(func() error {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		switch o := obj.(type) {
		case *echov1alpha1.EchoBackup:
			o.Status.Jobs = nil
		case *echov1alpha1.EchoRestore:
			o.Status.Jobs = nil
		}
		return k8sClient.Status().Update(context.Background(), obj)
	}, timeout, interval).Should(Succeed())
}

func TestBackupRefusesAJobWithAForgedControllerReference(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	// The Echo is held by a restore that exists, so that the backup waits
	// until the tenant has read its UID and planted the Job.
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hold"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: "never"}}})).To(Succeed())
	createEcho(t, newEcho(ns, echoKey.Name, func(e *echov1alpha1.Echo) {
		e.Annotations = map[string]string{echov1alpha1.RestoreAnnotation: "hold"}
	}))
	b := newBackup(ns, "b1", echoKey.Name)
	Expect(k8sClient.Create(ctx, b)).To(Succeed())
	key := client.ObjectKeyFromObject(b)
	expectBackupPhase(t, key, echov1alpha1.PhasePending, echov1alpha1.BackupReasonWaitingForRestore)

	planted := plantJob(t, forgeController(plantedJob(ns, "b1-backup", echoKey.Name, echov1alpha1.BackupLabel, "b1", "backup", true),
		getBackup(Default, key), "EchoBackup"),
		`{"size":1234,"checksum":"sha256:abcd","location":"s3://echo-backups/`+ns+`/journal/b1","files":2}`)
	Expect(metav1.IsControlledBy(planted, getBackup(Default, key))).To(BeTrue(), "the forged reference names the backup")
	updateEcho(t, echoKey, func(e *echov1alpha1.Echo) { delete(e.Annotations, echov1alpha1.RestoreAnnotation) })

	expectBackupRefusedJob(t, b, planted)
}

// TestArtifactDeletionRefusesAJobWithAForgedControllerReference: a delete
// Job planted with everything a tenant can give it, the backup's UID in
// its annotation, a controller reference naming the backup and the
// signature the tenant read on the backup's own backup Job, is refused.
func TestArtifactDeletionRefusesAJobWithAForgedControllerReference(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newDeleteBackup(ns, "b1", "journal")
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	backupJob := waitJob(t, ns, "b1-backup")
	signature := backupJob.Annotations[releasetrust.JobSignatureAnnotation]
	Expect(signature).NotTo(BeEmpty(), "the operator signs its Jobs")
	finishMoverJob(t, backupJob, `{"size":10,"checksum":"sha256:ab","location":"s3://echo-backups/`+ns+`/journal/b1","files":1}`, true)
	Eventually(func(g Gomega) bool {
		return meta.IsStatusConditionTrue(getBackup(g, client.ObjectKeyFromObject(b)).Status.Conditions, echov1alpha1.BackupConditionComplete)
	}, timeout, interval).Should(BeTrue())

	planted := forgeController(plantedJob(ns, "b1-delete", "journal", echov1alpha1.BackupLabel, "b1", "delete", true), b, "EchoBackup")
	planted.Annotations = map[string]string{echov1alpha1.BackupUIDAnnotation: string(b.UID), releasetrust.JobSignatureAnnotation: signature}
	planted = plantJob(t, planted, deleteSucceeded)

	deleteBackup(t, b)
	expectJobNotOwnedEvent(t, b, "b1-delete")
	expectHeld(t, b)
	Expect(eventReasonsOf(Default, b)).NotTo(ContainElement(echov1alpha1.EventReasonArtifactDeleted))
	expectUntouched(t, planted)
}

func TestRestoreRefusesAnInspectJobWithAForgedControllerReference(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := rolledOutPersistentEcho(t, ns)
	// The restore waits for its backup to complete: meanwhile the tenant
	// reads its UID and plants the inspect Job.
	backup := newBackup(ns, "web-1", "web")
	Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	rs := replaceRestore(ns)
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	key := client.ObjectKeyFromObject(rs)
	waitRestoreReason(t, key, echov1alpha1.RestoreReasonWaitingForBackup)
	planted := plantJob(t, forgeController(plantedJob(ns, "back-inspect", "web", echov1alpha1.RestoreLabel, "back", "inspect", true),
		getRestore(Default, key), "EchoRestore"), inspectResult(`{"persistence":{"enabled":true}}`, 1))

	finishMoverJob(t, waitJob(t, ns, "web-1-backup"),
		`{"size":10,"checksum":"sha256:ab","location":"s3://echo-backups/`+ns+`/web/web-1","files":1}`, true)
	expectRestoreRefusedInspectJob(t, rs, planted, echoKey)
}

func TestRestoreRefusesARestoreJobWithAForgedControllerReference(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := rolledOutPersistentEcho(t, ns)
	completedBackup(t, ns, "web-1", "web")
	rs := replaceRestore(ns)
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	key := client.ObjectKeyFromObject(rs)
	inspect := waitJob(t, ns, "back-inspect")
	// Still running: a restore Job of the restore's own is stopped before
	// the Echo is given back; this one is not the restore's to stop.
	planted := plantJob(t, forgeController(plantedJob(ns, "back-restore", "web", echov1alpha1.RestoreLabel, "back", "restore", true),
		getRestore(Default, key), "EchoRestore"), "")
	finishMoverJob(t, inspect, inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("back"))
	quiesce(t, echoKey)

	expectRestoreRefusedRestoreJob(t, rs, inspect, planted, echoKey)
}

// TestBackupTakesItsSignedJobWhoseRecordWasLost: the backup's own Job,
// whose record in status is lost, is taken again by its signature.
func TestBackupTakesItsSignedJobWhoseRecordWasLost(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newBackup(ns, "b1", "journal")
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	key := client.ObjectKeyFromObject(b)
	job := waitJob(t, ns, "b1-backup")
	recorded := echov1alpha1.JobReference{Name: "b1-backup", UID: job.UID}
	Eventually(func(g Gomega) []echov1alpha1.JobReference { return getBackup(g, key).Status.Jobs }, timeout, interval).
		Should(ConsistOf(recorded))

	loseJobRecords(t, b)
	Eventually(func(g Gomega) []echov1alpha1.JobReference { return getBackup(g, key).Status.Jobs }, timeout, interval).
		Should(ConsistOf(recorded), "the signed Job is taken, and recorded again")
	finishMoverJob(t, job, `{"size":10,"checksum":"sha256:ab","location":"s3://echo-backups/`+ns+`/journal/b1","files":1}`, true)
	Eventually(func(g Gomega) bool {
		return meta.IsStatusConditionTrue(getBackup(g, key).Status.Conditions, echov1alpha1.BackupConditionComplete)
	}, timeout, interval).Should(BeTrue())
	Expect(eventReasonsOf(Default, b)).NotTo(ContainElement(echov1alpha1.EventReasonJobNotOwned))
}

// TestArtifactDeletionTakesItsSignedJobWhoseRecordWasLost: the delete Job,
// which no owner reference ties to its backup, is taken by its signature
// when its record is lost, and recorded again.
func TestArtifactDeletionTakesItsSignedJobWhoseRecordWasLost(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	b := newDeleteBackup(ns, "b1", "journal")
	completeBackup(t, b)
	key := client.ObjectKeyFromObject(b)
	deleteBackup(t, b)
	job := waitJob(t, ns, "b1-delete")
	recorded := echov1alpha1.JobReference{Name: "b1-delete", UID: job.UID}
	Eventually(func(g Gomega) []echov1alpha1.JobReference { return getBackup(g, key).Status.Jobs }, timeout, interval).
		Should(ContainElement(recorded))

	loseJobRecords(t, b)
	Eventually(func(g Gomega) []echov1alpha1.JobReference { return getBackup(g, key).Status.Jobs }, timeout, interval).
		Should(ContainElement(recorded), "the signed delete Job is taken, and recorded again")
	finishMoverJob(t, job, deleteSucceeded, true)
	expectGone(t, b)
}

// TestRestoreTakesItsSignedJobsWhoseRecordWasLost: the inspect and restore
// Jobs, whose records in status are lost, are taken again by their
// signature, and the restore writes the data.
func TestRestoreTakesItsSignedJobsWhoseRecordWasLost(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	echoKey := rolledOutPersistentEcho(t, ns)
	completedBackup(t, ns, "web-1", "web")
	rs := replaceRestore(ns)
	Expect(k8sClient.Create(context.Background(), rs)).To(Succeed())
	key := client.ObjectKeyFromObject(rs)
	records := func(g Gomega) []echov1alpha1.JobReference { return getRestore(g, key).Status.Jobs }

	inspect := waitJob(t, ns, "back-inspect")
	inspected := echov1alpha1.JobReference{Name: "back-inspect", UID: inspect.UID}
	Eventually(records, timeout, interval).Should(ConsistOf(inspected))
	loseJobRecords(t, rs)
	Eventually(records, timeout, interval).Should(ConsistOf(inspected), "the signed inspect Job is taken, and recorded again")
	finishMoverJob(t, inspect, inspectResult(`{"persistence":{"enabled":true}}`, 1), true)
	Eventually(func(g Gomega) string { return holder(g, echoKey) }, timeout, interval).Should(Equal("back"))
	quiesce(t, echoKey)

	restore := waitJob(t, ns, "back-restore")
	restored := echov1alpha1.JobReference{Name: "back-restore", UID: restore.UID}
	Eventually(records, timeout, interval).Should(ConsistOf(inspected, restored))
	loseJobRecords(t, rs)
	Eventually(records, timeout, interval).Should(ConsistOf(inspected, restored), "the signed Jobs are taken, and recorded again")
	finishMoverJob(t, restore, restoredData, true)
	Eventually(func(g Gomega) bool {
		return meta.IsStatusConditionTrue(getRestore(g, key).Status.Conditions, echov1alpha1.RestoreConditionDataRestored)
	}, timeout, interval).Should(BeTrue())
	Expect(eventReasonsOf(Default, rs)).NotTo(ContainElement(echov1alpha1.EventReasonJobNotOwned))
}
