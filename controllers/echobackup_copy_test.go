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

// The copies of a backup (spec.copyTo): the tests play the Job controller
// and the kubelet for the copy Jobs as finishMoverJob does.

// copyTo is a copy named name to the EchoBackupLocation location.
func copyTo(name, location string) echov1alpha1.BackupCopy {
	return echov1alpha1.BackupCopy{Name: name, Storage: echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: location}}}
}

// createOffsiteLocation creates the EchoBackupLocation offsite of ns and
// its opted-in credentials Secret.
func createOffsiteLocation(t *testing.T, ns string) {
	t.Helper()
	createSecret(t, ns, "offsite-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	Expect(k8sClient.Create(context.Background(), newLocation(ns, "offsite"))).To(Succeed())
}

// completeCopiedBackup creates the Echo b backs up and the location
// offsite in b's namespace, then b, copied there; it completes b and
// returns the Job of its copy.
func completeCopiedBackup(t *testing.T, b *echov1alpha1.EchoBackup) *batchv1.Job {
	t.Helper()
	createEcho(t, newEcho(b.Namespace, b.Spec.EchoName))
	createOffsiteLocation(t, b.Namespace)
	b.Spec.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite")}
	completeBackup(t, b)
	return waitJob(t, b.Namespace, b.Name+"-copy-offsite")
}

// setBackupAnnotation sets the annotation name of the EchoBackup key to
// value, or removes it when value is empty.
func setBackupAnnotation(key client.ObjectKey, name, value string) {
	Eventually(func() error {
		got := getBackup(Default, key)
		if value == "" {
			delete(got.Annotations, name)
		} else {
			metav1.SetMetaDataAnnotation(&got.ObjectMeta, name, value)
		}
		return k8sClient.Update(context.Background(), got)
	}, timeout, interval).Should(Succeed())
}

// copyOf is the status of the copy name of the backup, nil when absent.
func copyOf(b *echov1alpha1.EchoBackup, name string) *echov1alpha1.BackupCopyStatus {
	for i := range b.Status.Copies {
		if b.Status.Copies[i].Name == name {
			return &b.Status.Copies[i]
		}
	}
	return nil
}

func TestEchoBackupCopiesEachCompletedBackup(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	createSecret(t, ns, "offsite-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	Expect(k8sClient.Create(context.Background(), newLocation(ns, "offsite"))).To(Succeed())
	second := newLocation(ns, "second")
	second.Spec.S3.Bucket = "second-bucket"
	Expect(k8sClient.Create(context.Background(), second)).To(Succeed())

	b := newBackup(ns, "nightly-1", "journal")
	b.Spec.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite"), copyTo("second", "second")}
	key := client.ObjectKeyFromObject(b)
	Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	expectNoJob(t, ns, "nightly-1-copy-offsite")

	backupJob := waitJob(t, ns, "nightly-1-backup")
	finishMoverJob(t, backupJob, `{"size":10,"checksum":"sha256:ab","location":"s3://echo-backups/`+ns+`/journal/nightly-1","files":1}`, true)

	offsite := waitJob(t, ns, "nightly-1-copy-offsite")
	secondJob := waitJob(t, ns, "nightly-1-copy-second")
	t.Run("each copy's Job reads the backup and writes the copy's storage", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(metav1.IsControlledBy(offsite, getBackup(Default, key))).To(BeTrue())
		c := offsite.Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("copy", "--key="+ns+"/journal/nightly-1", "--checksum=sha256:ab",
			"--s3-bucket=echo-backups", "--to-s3-bucket=offsite-bucket", "--to-s3-prefix=team-a"))
		Expect(c.Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.Name", "offsite-credentials")))
		Expect(c.Env).To(ContainElement(And(HaveField("Name", "COPY_TO_AWS_ACCESS_KEY_ID"), HaveField("ValueFrom.SecretKeyRef.Name", "offsite-credentials"))))
	})
	Eventually(func(g Gomega) {
		got := getBackup(g, key)
		g.Expect(copyOf(got, "offsite")).To(HaveField("Phase", echov1alpha1.PhaseRunning))
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionCopied)).
			To(HaveField("Reason", echov1alpha1.CopyReasonCopying))
	}, timeout, interval).Should(Succeed())

	finishMoverJob(t, offsite, `{"size":10,"checksum":"sha256:ab","location":"s3://offsite-bucket/team-a/`+ns+`/journal/nightly-1","files":1}`, true)
	podLogs.serve(ns, secondJob.Name+"-pod", `{"level":"ERROR","msg":"copy failed","error":"connection refused"}`+"\n")
	finishMoverJob(t, secondJob, `{"error":"copy to s3://second-bucket/team-a/`+ns+`/journal/nightly-1: Unavailable: connection refused","reason":"Unavailable","retryable":true}`, false)

	t.Run("a failed copy does not fail the backup, says why and keeps its mover's log", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) {
			got := getBackup(g, key)
			g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseCompleted))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeTrue())
			done := copyOf(got, "offsite")
			g.Expect(done).NotTo(BeNil())
			g.Expect(done.Phase).To(Equal(echov1alpha1.PhaseCompleted))
			g.Expect(done.Checksum).To(Equal("sha256:ab"))
			g.Expect(done.Key).To(Equal("s3://offsite-bucket/team-a/" + ns + "/journal/nightly-1"))
			g.Expect(done.CompletionTime).NotTo(BeNil())
			failed := copyOf(got, "second")
			g.Expect(failed).NotTo(BeNil())
			g.Expect(failed.Phase).To(Equal(echov1alpha1.PhaseFailed))
			g.Expect(failed.Reason).To(Equal(echov1alpha1.BackupReasonStorageError))
			g.Expect(failed.Message).To(ContainSubstring("connection refused"))
			g.Expect(failed.MoverLog).NotTo(BeNil(), "the copy Job's log is kept")
			g.Expect(failed.MoverLog.Job).To(Equal(secondJob.Name))
			g.Expect(failed.MoverLog.Log).To(ContainSubstring(`"msg":"copy failed"`))
			copied := meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionCopied)
			g.Expect(copied).NotTo(BeNil())
			g.Expect(copied.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(copied.Reason).To(Equal(echov1alpha1.CopyReasonCopyFailed))
			g.Expect(copied.Message).To(ContainSubstring("second"))
			g.Expect(copied.Message).NotTo(ContainSubstring("offsite"))
		}, timeout, interval).Should(Succeed())
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, b.Name) }, timeout, interval).
			Should(ContainElements(echov1alpha1.EventReasonCopyStarted, echov1alpha1.EventReasonCopyCompleted, echov1alpha1.EventReasonCopyFailed))
	})
	t.Run("the copy Jobs go once their outcome is recorded", func(t *testing.T) {
		RegisterTestingT(t)
		expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: offsite.Name}})
		expectGone(t, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secondJob.Name}})
		Expect(getBackup(Default, key).Status.Jobs).To(ContainElement(HaveField("Name", "nightly-1-copy-offsite")))
	})
}

func TestEchoBackupCopyAllSucceed(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	createSecret(t, ns, "offsite-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	Expect(k8sClient.Create(context.Background(), newLocation(ns, "offsite"))).To(Succeed())
	b := newBackup(ns, "nightly-2", "journal")
	b.Spec.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite")}
	completeBackup(t, b)
	job := waitJob(t, ns, "nightly-2-copy-offsite")
	finishMoverJob(t, job, `{"size":10,"checksum":"sha256:ab","location":"s3://offsite-bucket/team-a/x","files":1}`, true)
	Eventually(func(g Gomega) *metav1.Condition {
		return meta.FindStatusCondition(getBackup(g, client.ObjectKeyFromObject(b)).Status.Conditions, echov1alpha1.BackupConditionCopied)
	}, timeout, interval).Should(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", echov1alpha1.CopyReasonCopied)))
}

// TestEchoBackupCopyIdentityConflict: two identities, one through a
// location, cannot be met by one pod: the copy fails with what to fix,
// and no Job is made for it.
func TestEchoBackupCopyIdentityConflict(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	loc := &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "by-identity"},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{Bucket: "offsite-bucket", Endpoint: "https://offsite.example.test",
			Identity: &echov1alpha1.S3Identity{ServiceAccountName: "offsite-writer"}}},
	}
	Expect(k8sClient.Create(ctx, loc)).To(Succeed())
	const endpoint = "https://minio.storage.example.test"
	Expect(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-writer",
		Labels:      map[string]string{echov1alpha1.StorageIdentityLabel: "true"},
		Annotations: map[string]string{echov1alpha1.StorageEndpointsAnnotation: endpoint}}})).To(Succeed())
	b := newBackup(ns, "nightly-3", "journal")
	b.Spec.Storage.S3.CredentialsSecretRef = nil
	b.Spec.Storage.S3.Endpoint = endpoint
	b.Spec.Storage.S3.Identity = &echov1alpha1.S3Identity{ServiceAccountName: "backup-writer"}
	b.Spec.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "by-identity")}
	completeBackup(t, b)

	Eventually(func(g Gomega) {
		st := copyOf(getBackup(g, client.ObjectKeyFromObject(b)), "offsite")
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Phase).To(Equal(echov1alpha1.PhaseFailed))
		g.Expect(st.Reason).To(Equal(echov1alpha1.CopyReasonIdentityConflict))
		g.Expect(st.Message).To(And(ContainSubstring("backup-writer"), ContainSubstring("offsite-writer"), ContainSubstring("credentialsSecretRef")))
	}, timeout, interval).Should(Succeed())
	Eventually(func(g Gomega) []string {
		return eventMessages(g, ns, b.Name, echov1alpha1.EventReasonCopyFailed)
	}, timeout, interval).Should(ContainElement(ContainSubstring("IdentityConflict")))
	expectNoJob(t, ns, "nightly-3-copy-offsite")
	Expect(getBackup(Default, client.ObjectKeyFromObject(b)).Status.Phase).To(Equal(echov1alpha1.PhaseCompleted))
}

// TestEchoRestoreFromACopy: a restore naming a copy of its EchoBackup
// reads that copy's storage, once the copy completed; a copy the backup
// does not have fails the restore, saying which it has.
func TestEchoRestoreFromACopy(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	b := newBackup(ns, "nightly-4", "journal")
	copyJob := completeCopiedBackup(t, b)

	restoreFrom := func(name, copyName string) client.ObjectKey {
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: b.Name, Copy: copyName}}}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		return client.ObjectKeyFromObject(rs)
	}
	fromCopy := restoreFrom("from-offsite", "offsite")
	got := waitRestoreReason(t, fromCopy, echov1alpha1.RestoreReasonWaitingForBackup)
	Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.RestoreConditionComplete).Message).To(ContainSubstring("copy offsite"))
	expectNoJob(t, ns, "from-offsite-inspect")

	finishMoverJob(t, copyJob, `{"size":10,"checksum":"sha256:ab","location":"s3://offsite-bucket/team-a/`+ns+`/journal/nightly-4","files":1}`, true)
	inspect := waitJob(t, ns, "from-offsite-inspect")
	c := inspect.Spec.Template.Spec.Containers[0]
	Expect(c.Args).To(ContainElements("--key="+ns+"/journal/nightly-4", "--s3-bucket=offsite-bucket", "--s3-prefix=team-a"))
	Expect(c.Env).To(ContainElement(HaveField("ValueFrom.SecretKeyRef.Name", "offsite-credentials")))

	t.Run("a copy the backup does not have", func(t *testing.T) {
		RegisterTestingT(t)
		key := restoreFrom("from-nowhere", "nowhere")
		Eventually(func(g Gomega) {
			c := meta.FindStatusCondition(getRestore(g, key).Status.Conditions, echov1alpha1.RestoreConditionFailed)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonCopyUnavailable))
			g.Expect(c.Message).To(ContainSubstring("offsite"))
		}, timeout, interval).Should(Succeed())
	})
}

// TestEchoBackupDeleteDeletesEveryCopy: with deletionPolicy Delete, the
// artifact goes from each copy's storage, then from the backup's own, and
// the EchoBackup stays until all are gone.
func TestEchoBackupDeleteDeletesEveryCopy(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	b := newDeleteBackup(ns, "nightly-5", "journal")
	finishMoverJob(t, completeCopiedBackup(t, b),
		`{"size":10,"checksum":"sha256:ab","location":"s3://offsite-bucket/team-a/`+ns+`/journal/nightly-5","files":1}`, true)
	Eventually(func(g Gomega) *echov1alpha1.BackupCopyStatus {
		return copyOf(getBackup(g, client.ObjectKeyFromObject(b)), "offsite")
	},
		timeout, interval).Should(HaveField("Phase", echov1alpha1.PhaseCompleted))

	deleteBackup(t, b)
	copyDelete := waitJob(t, ns, "nightly-5-delete-offsite")
	Expect(copyDelete.Spec.Template.Spec.Containers[0].Args).To(ContainElements("delete", "--key="+ns+"/journal/nightly-5", "--s3-bucket=offsite-bucket"))
	expectNoJob(t, ns, "nightly-5-delete")
	expectHeld(t, b)

	finishMoverJob(t, copyDelete, `{"location":"s3://offsite-bucket/team-a/`+ns+`/journal/nightly-5"}`, true)
	Eventually(func(g Gomega) []echov1alpha1.BackupCopyStatus {
		return getBackup(g, client.ObjectKeyFromObject(b)).Status.Copies
	},
		timeout, interval).Should(BeEmpty(), "a copy deleted holds nothing any more")
	primary := waitJob(t, ns, "nightly-5-delete")
	Expect(primary.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--s3-bucket=echo-backups"))
	expectHeld(t, b)
	finishMoverJob(t, primary, deleteSucceeded, true)
	expectGone(t, b)
	Eventually(func(g Gomega) []string { return eventMessages(g, ns, b.Name, echov1alpha1.EventReasonArtifactDeleted) }, timeout, interval).
		Should(ContainElement(ContainSubstring("Deleted copy offsite")))
}

// TestEchoBackupCopyWaitsForItsSecret: a copy whose storage names a Secret
// that does not exist yet waits, Pending, and starts once it exists with
// the label, though its backup is complete.
func TestEchoBackupCopyWaitsForItsSecret(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	Expect(k8sClient.Create(ctx, newLocation(ns, "offsite"))).To(Succeed())
	b := newBackup(ns, "nightly-6", "journal")
	b.Spec.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite")}
	completeBackup(t, b)
	Eventually(func(g Gomega) {
		st := copyOf(getBackup(g, client.ObjectKeyFromObject(b)), "offsite")
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Phase).To(Equal(echov1alpha1.PhasePending))
		g.Expect(st.Reason).To(Equal(echov1alpha1.ReasonSecretNotFound))
		g.Expect(st.Message).To(ContainSubstring("offsite-credentials"))
	}, timeout, interval).Should(Succeed())
	expectNoJob(t, ns, "nightly-6-copy-offsite")

	createSecret(t, ns, "offsite-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	waitJob(t, ns, "nightly-6-copy-offsite")
}

// TestALocationACopyNamesIsInUse: a location named only by a copy is held,
// as one a backup's storage names: deleting a backup with deletionPolicy
// Delete needs it to delete the copy there.
func TestALocationACopyNamesIsInUse(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	loc := newLocation(ns, "offsite")
	Expect(k8sClient.Create(ctx, loc)).To(Succeed())
	locKey := client.ObjectKeyFromObject(loc)
	Eventually(func(g Gomega) []string {
		g.Expect(k8sClient.Get(ctx, locKey, loc)).To(Succeed())
		return loc.Finalizers
	}, timeout, interval).Should(ContainElement(echov1alpha1.LocationFinalizer))
	b := newBackup(ns, "nightly-7", "journal")
	b.Spec.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite")}
	Expect(k8sClient.Create(ctx, b)).To(Succeed())

	Expect(k8sClient.Delete(ctx, loc)).To(Succeed())
	Eventually(func(g Gomega) string {
		g.Expect(k8sClient.Get(ctx, locKey, loc)).To(Succeed())
		c := meta.FindStatusCondition(loc.Status.Conditions, echov1alpha1.LocationConditionDeleting)
		g.Expect(c).NotTo(BeNil())
		return c.Message
	}, timeout, interval).Should(ContainSubstring("EchoBackup nightly-7"))
	Expect(k8sClient.Delete(ctx, b)).To(Succeed())
	expectGone(t, loc)
}
