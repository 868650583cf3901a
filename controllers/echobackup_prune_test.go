package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Retention per location (spec.copyRetention): the tests start the
// schedule's backups themselves, as it would, and play the Jobs.

// startScheduledBackup creates the backup a schedule key would start for
// at, with a copy offsite, and completes it and its copy.
func startScheduledBackup(t *testing.T, key types.NamespacedName, tmpl echov1alpha1.EchoBackupSpec, name string, at time.Time) *echov1alpha1.EchoBackup {
	t.Helper()
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name,
			Labels:      map[string]string{echov1alpha1.ScheduleLabel: key.Name},
			Annotations: map[string]string{echov1alpha1.ScheduledAtAnnotation: at.UTC().Format(time.RFC3339)}},
		Spec: tmpl,
	}
	completeBackup(t, b)
	finishMoverJob(t, waitJob(t, key.Namespace, name+"-copy-offsite"),
		`{"size":10,"checksum":"sha256:ab","location":"s3://offsite-bucket/team-a/`+key.Namespace+`/journal/`+name+`","files":1}`, true)
	Eventually(func(g Gomega) *echov1alpha1.BackupCopyStatus {
		return copyOf(getBackup(g, client.ObjectKeyFromObject(b)), "offsite")
	}, timeout, interval).Should(HaveField("Phase", echov1alpha1.PhaseCompleted))
	return b
}

// TestEchoBackupScheduleRetentionPerLocation: the primary storage keeps 2
// backups, the offsite copy 4. After 5 backups the oldest is gone from
// both, the next two lose their primary artifact only and stay for their
// copy, and the newest two are untouched.
func TestEchoBackupScheduleRetentionPerLocation(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	createOffsiteLocation(t, ns)

	tmpl := newDeleteBackup(ns, "template", "journal").Spec
	tmpl.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite")}
	key := types.NamespacedName{Namespace: ns, Name: "nightly"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: echov1alpha1.EchoBackupScheduleSpec{
			Schedule: "@yearly", Suspend: true, Template: tmpl,
			Retention:     &echov1alpha1.RetentionPolicy{KeepLast: ptr.To[int32](2)},
			CopyRetention: []echov1alpha1.CopyRetentionPolicy{{Name: "offsite", RetentionPolicy: echov1alpha1.RetentionPolicy{KeepLast: ptr.To[int32](4)}}},
		},
	})).To(Succeed())

	start := clock.Now().Add(-24 * time.Hour)
	backups := make([]*echov1alpha1.EchoBackup, 5)
	for i := range backups {
		backups[i] = startScheduledBackup(t, key, tmpl, fmt.Sprintf("nightly-%d", i+1), start.Add(time.Duration(i)*time.Hour))
	}
	oldest, primaryPruned, kept := backups[0], backups[1:3], backups[3:]

	t.Run("a backup no location keeps goes, its copy then its artifact deleted", func(t *testing.T) {
		RegisterTestingT(t)
		copyDelete := waitJob(t, ns, oldest.Name+"-delete-offsite")
		expectHeld(t, oldest)
		finishMoverJob(t, copyDelete, deleteSucceeded, true)
		finishMoverJob(t, waitJob(t, ns, oldest.Name+"-delete"), deleteSucceeded, true)
		expectGone(t, oldest)
	})

	t.Run("a backup only its copy keeps loses its primary artifact and stays", func(t *testing.T) {
		RegisterTestingT(t)
		for _, b := range primaryPruned {
			job := waitJob(t, ns, b.Name+"-delete")
			Expect(getBackup(Default, client.ObjectKeyFromObject(b)).Annotations).To(HaveKeyWithValue(echov1alpha1.PruneAnnotation, echov1alpha1.PruneStorage))
			Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElements("delete", "--s3-bucket=echo-backups"))
			finishMoverJob(t, job, deleteSucceeded, true)
			Eventually(func(g Gomega) {
				got := getBackup(g, client.ObjectKeyFromObject(b))
				g.Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionPruned)).
					To(And(Not(BeNil()), HaveField("Status", metav1.ConditionTrue), HaveField("Reason", echov1alpha1.BackupReasonArtifactPruned)))
				g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseCompleted))
				g.Expect(copyOf(got, "offsite")).To(HaveField("Phase", echov1alpha1.PhaseCompleted))
				g.Expect(got.DeletionTimestamp).To(BeNil())
			}, timeout, interval).Should(Succeed())
			expectGone(t, job)
			expectNoJob(t, ns, b.Name+"-delete-offsite")
		}
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, primaryPruned[0].Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonArtifactPruned))
	})

	t.Run("the backups every location keeps are untouched", func(t *testing.T) {
		RegisterTestingT(t)
		for _, b := range kept {
			got := getBackup(Default, client.ObjectKeyFromObject(b))
			Expect(got.Annotations).NotTo(HaveKey(echov1alpha1.PruneAnnotation))
			expectNoJob(t, ns, b.Name+"-delete")
		}
		Expect(scheduledBackups(Default, key)).To(HaveLen(4))
	})

	t.Run("once done, nothing is written again", func(t *testing.T) {
		RegisterTestingT(t)
		versions := func(g Gomega) map[string]string {
			out := map[string]string{"schedule": getSchedule(g, key).ResourceVersion}
			for _, b := range scheduledBackups(g, key) {
				out[b.Name] = b.ResourceVersion
			}
			return out
		}
		before := versions(Default)
		Consistently(versions, "2s", interval).Should(Equal(before))
	})

	t.Run("a restore from a pruned location fails saying so", func(t *testing.T) {
		RegisterTestingT(t)
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-pruned"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: primaryPruned[0].Name}}}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		c := waitRestoreFailed(t, client.ObjectKeyFromObject(rs))
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonArtifactPruned))
		Expect(c.Message).To(ContainSubstring("offsite"))
	})

	t.Run("once the copy's retention drops it too, the EchoBackup goes without deleting its primary artifact again", func(t *testing.T) {
		RegisterTestingT(t)
		b := primaryPruned[0]
		Eventually(func() error {
			s := getSchedule(Default, key)
			s.Spec.CopyRetention[0].KeepLast = ptr.To[int32](3)
			return k8sClient.Update(ctx, s)
		}, timeout, interval).Should(Succeed())
		finishMoverJob(t, waitJob(t, ns, b.Name+"-delete-offsite"), deleteSucceeded, true)
		expectGone(t, b)
		Expect(getBackup(Default, client.ObjectKeyFromObject(primaryPruned[1])).DeletionTimestamp).To(BeNil())
	})
}

// TestEchoBackupPruneOfACopy: a copy listed in PruneAnnotation is deleted
// at its storage and turns Pruned; the backup and its primary artifact
// stay, and a restore from that copy fails saying it was pruned.
func TestEchoBackupPruneOfACopy(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	createOffsiteLocation(t, ns)
	tmpl := newDeleteBackup(ns, "template", "journal").Spec
	tmpl.CopyTo = []echov1alpha1.BackupCopy{copyTo("offsite", "offsite")}
	b := startScheduledBackup(t, types.NamespacedName{Namespace: ns, Name: "none"}, tmpl, "weekly-1", clock.Now())
	bkey := client.ObjectKeyFromObject(b)

	setBackupAnnotation(bkey, echov1alpha1.PruneAnnotation, echov1alpha1.PruneCopyPrefix+"offsite")
	job := waitJob(t, ns, "weekly-1-delete-offsite")
	Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--s3-bucket=offsite-bucket"))
	finishMoverJob(t, job, deleteSucceeded, true)
	Eventually(func(g Gomega) {
		got := getBackup(g, bkey)
		st := copyOf(got, "offsite")
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Phase).To(Equal(echov1alpha1.PhasePruned))
		g.Expect(st.Reason).To(Equal(echov1alpha1.BackupReasonArtifactPruned))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, echov1alpha1.BackupConditionCopied)).To(BeTrue())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, echov1alpha1.BackupConditionPruned)).To(BeNil())
	}, timeout, interval).Should(Succeed())
	expectGone(t, job)
	expectNoJob(t, ns, "weekly-1-copy-offsite")
	expectNoJob(t, ns, "weekly-1-delete")

	rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-copy"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{BackupName: b.Name, Copy: "offsite"}}}
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	Expect(waitRestoreFailed(t, client.ObjectKeyFromObject(rs)).Reason).To(Equal(echov1alpha1.RestoreReasonArtifactPruned))

	t.Run("its deletion then deletes only the primary artifact", func(t *testing.T) {
		RegisterTestingT(t)
		deleteBackup(t, b)
		finishMoverJob(t, waitJob(t, ns, "weekly-1-delete"), deleteSucceeded, true)
		expectGone(t, b)
	})
}

// TestEchoBackupPruneWaitsForTheCopy: a location listed for pruning while
// the copy is being made is not pruned before the copy completed: neither
// the copy, nor the backup's own artifact the copy reads.
func TestEchoBackupPruneWaitsForTheCopy(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	b := newDeleteBackup(ns, "busy-1", "journal")
	copyJob := completeCopiedBackup(t, b)
	bkey := client.ObjectKeyFromObject(b)

	setBackupAnnotation(bkey, echov1alpha1.PruneAnnotation, echov1alpha1.PruneStorage+","+echov1alpha1.PruneCopyPrefix+"offsite")
	expectNoJob(t, ns, "busy-1-delete-offsite")
	expectNoJob(t, ns, "busy-1-delete")

	finishMoverJob(t, copyJob, `{"size":10,"checksum":"sha256:ab","location":"s3://offsite-bucket/team-a/x","files":1}`, true)
	finishMoverJob(t, waitJob(t, ns, "busy-1-delete-offsite"), deleteSucceeded, true)
	finishMoverJob(t, waitJob(t, ns, "busy-1-delete"), deleteSucceeded, true)
	Eventually(func(g Gomega) {
		got := getBackup(g, bkey)
		g.Expect(copyOf(got, "offsite")).To(HaveField("Phase", echov1alpha1.PhasePruned))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, echov1alpha1.BackupConditionPruned)).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	t.Run("with nothing left anywhere, its deletion runs no Job", func(t *testing.T) {
		RegisterTestingT(t)
		deleteBackup(t, b)
		expectGone(t, b)
	})
}

// TestEchoBackupPruneUnderRetain: a location listed for pruning on a
// backup whose deletionPolicy is Retain is not deleted; the backup says
// so, in the Pruned condition and a Warning Event, until the annotation
// goes.
func TestEchoBackupPruneUnderRetain(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "journal"))
	completedBackup(t, ns, "kept", "journal")
	key := types.NamespacedName{Namespace: ns, Name: "kept"}

	setBackupAnnotation(key, echov1alpha1.PruneAnnotation, echov1alpha1.PruneStorage)
	Eventually(func(g Gomega) {
		c := meta.FindStatusCondition(getBackup(g, key).Status.Conditions, echov1alpha1.BackupConditionPruned)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(echov1alpha1.BackupReasonPruneRetained))
		g.Expect(c.Message).To(ContainSubstring("deletionPolicy is Retain"))
		g.Expect(eventReasons(g, ns, key.Name)).To(ContainElement(echov1alpha1.EventReasonPruneRetained))
	}, timeout, interval).Should(Succeed())
	expectNoJob(t, ns, "kept-delete")
	Expect(getBackup(Default, key).Status.Phase).To(Equal(echov1alpha1.PhaseCompleted))

	setBackupAnnotation(key, echov1alpha1.PruneAnnotation, "")
	Eventually(func(g Gomega) {
		g.Expect(meta.FindStatusCondition(getBackup(g, key).Status.Conditions, echov1alpha1.BackupConditionPruned)).To(BeNil())
	}, timeout, interval).Should(Succeed())
}
