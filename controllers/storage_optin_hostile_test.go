package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// What a tenant with the namespace edit role, or only the Echo roles,
// names as a backup's or restore's storage reaches a data mover Job only
// when its owner opted it in: a Secret that does not exist yet holds the
// work back (no Job names it), a claim needs echo.dev/backup-storage=true,
// an Echo's data claim must be its release's, and a token or SSE-C key
// goes only where its owner allowed.

// waitPendingOn waits for the Complete condition of a backup or restore
// (got reads its conditions and phase) to wait for reason, Pending, and
// returns its message.
func waitPendingOn(t *testing.T, got func(Gomega) ([]metav1.Condition, echov1alpha1.Phase), reason string) string {
	t.Helper()
	var msg string
	Eventually(func(g Gomega) {
		conds, phase := got(g)
		c := meta.FindStatusCondition(conds, echov1alpha1.BackupConditionComplete)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(phase).To(Equal(echov1alpha1.PhasePending))
		msg = c.Message
	}, timeout, interval).Should(Succeed())
	return msg
}

func backupConditions(key types.NamespacedName) func(Gomega) ([]metav1.Condition, echov1alpha1.Phase) {
	return func(g Gomega) ([]metav1.Condition, echov1alpha1.Phase) {
		b := getBackup(g, key)
		return b.Status.Conditions, b.Status.Phase
	}
}

func restoreConditions(key types.NamespacedName) func(Gomega) ([]metav1.Condition, echov1alpha1.Phase) {
	return func(g Gomega) ([]metav1.Condition, echov1alpha1.Phase) {
		rs := getRestore(g, key)
		return rs.Status.Conditions, rs.Status.Phase
	}
}

// expectWarning waits for a Warning Event of reason on obj, whose note
// contains each of says.
func expectWarning(t *testing.T, obj client.Object, reason string, says ...string) {
	t.Helper()
	Eventually(func(g Gomega) {
		found := 0
		for _, ev := range objectEvents(g, obj.GetNamespace(), obj.GetName()) {
			if ev.Reason != reason {
				continue
			}
			found++
			g.Expect(ev).To(operatorEvent(obj, corev1.EventTypeWarning, reason))
			g.Expect(ev.Action).To(Equal(echov1alpha1.EventActionCheckingStorageSecrets))
			for _, s := range says {
				g.Expect(ev.Note).To(ContainSubstring(s))
			}
		}
		g.Expect(found).To(BeNumerically(">", 0), "no Event %s", reason)
	}, timeout, interval).Should(Succeed())
}

// A Job names a Secret only once it exists with the label: a pod waiting
// for a missing Secret reads whatever Secret of that name appears, label
// or not. So the backup waits, Pending; a Secret of that name created
// without the label starts nothing; labelled, it brings the backup back
// (the operator watches opted-in Secrets) and the Job starts.
func TestBackupWaitsForAMissingStorageSecret(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	createEcho(t, newEcho(ns, echoKey.Name, persistentEcho))
	rollOut(t, echoKey)

	b := newBackup(ns, "early", echoKey.Name)
	withCredentials(&b.Spec.Storage, "later", "AWS_ACCESS_KEY_ID", "")
	Expect(k8sClient.Create(ctx, b)).To(Succeed())
	key := client.ObjectKeyFromObject(b)
	msg := waitPendingOn(t, backupConditions(key), echov1alpha1.ReasonSecretNotFound)
	Expect(msg).To(ContainSubstring(`Secret "later" does not exist in namespace ` + ns))
	Expect(msg).To(ContainSubstring("kubectl label secret -n " + ns + " later echo.dev/storage-credentials=true"))
	expectWarning(t, b, echov1alpha1.EventReasonSecretNotFound, `Secret "later" does not exist`)
	expectNoJob(t, ns, "early-backup")

	// A Secret of that name appears without the label: still no Job.
	createSecret(t, ns, "later", map[string]string{"app": "db"}, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	expectNoJob(t, ns, "early-backup")
	Expect(getBackup(Default, key).Status.Phase).To(Equal(echov1alpha1.PhasePending), "the backup still waits")

	// Its owner labels it: the backup goes on by itself.
	setSecretLabels(t, ns, "later", storageSecretOptedIn)
	job := waitJob(t, ns, "early-backup")
	for _, e := range storageEnv(Default, job.Spec.Template.Spec.Containers[0].Env) {
		Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("later"))
	}
}

// A restore waits for a missing Secret alike, within its deadline, and
// goes on when the Secret appears with the label.
func TestRestoreWaitsForAMissingStorageSecret(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	storage := newBackup(ns, "unused", "unused").Spec.Storage
	withCredentials(&storage, "restore-later", "AWS_ACCESS_KEY_ID", "")
	rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "early"},
		Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{Storage: &storage, Key: "src/web/web-1"}, EchoName: "web"}}
	Expect(k8sClient.Create(ctx, rs)).To(Succeed())
	key := client.ObjectKeyFromObject(rs)
	Expect(waitPendingOn(t, restoreConditions(key), echov1alpha1.ReasonSecretNotFound)).To(ContainSubstring(`Secret "restore-later" does not exist`))
	expectWarning(t, rs, echov1alpha1.EventReasonSecretNotFound, "restore-later")
	expectNoJob(t, ns, "early-inspect")

	createSecret(t, ns, "restore-later", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	waitJob(t, ns, "early-inspect")
}

// createClaim creates a PersistentVolumeClaim as a tenant with the edit
// role would.
func createClaim(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	Expect(k8sClient.Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	})).To(Succeed())
}

func pvcStorage(claim string) echov1alpha1.BackupStorage {
	return echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: claim, SubPath: "echo"}}
}

// A claim named as storage is mounted read-write by the data mover: only
// a claim opted in as backup storage may be. Another workload's claim is
// neither written by a backup nor read (and served) by a restore.
func TestStorageClaimNeedsOptIn(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	createEcho(t, newEcho(ns, echoKey.Name, persistentEcho))
	rollOut(t, echoKey)
	createClaim(t, ns, "payments-data", map[string]string{"app": "payments"})
	createClaim(t, ns, "backups", map[string]string{echov1alpha1.BackupStorageClaimLabel: "true"})

	t.Run("a backup to another workload's claim fails, and no Job starts", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "into-payments", echoKey.Name)
		b.Spec.Storage = pvcStorage("payments-data")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
		Expect(c.Reason).To(Equal(echov1alpha1.ReasonClaimNotOptedIn))
		fix := "kubectl label pvc -n " + ns + " payments-data echo.dev/backup-storage=true"
		Expect(c.Message).To(ContainSubstring(fix))
		expectWarning(t, b, echov1alpha1.EventReasonClaimNotOptedIn, fix)
		expectNoJob(t, ns, "into-payments-backup")
	})

	t.Run("a restore from another workload's claim fails, and no Job starts", func(t *testing.T) {
		RegisterTestingT(t)
		storage := pvcStorage("payments-data")
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-payments"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{Storage: &storage, Key: ns + "/journal/x"}, EchoName: "copy"}}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		c := waitRestoreFailed(t, client.ObjectKeyFromObject(rs))
		Expect(c.Reason).To(Equal(echov1alpha1.ReasonClaimNotOptedIn))
		expectNoJob(t, ns, "from-payments-inspect")
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "copy"}, &echov1alpha1.Echo{})).NotTo(Succeed(), "no Echo was created")
	})

	t.Run("a claim that does not exist fails the backup", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "into-nothing", echoKey.Name)
		b.Spec.Storage = pvcStorage("nothing")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
		Expect(c.Reason).To(Equal(echov1alpha1.ReasonClaimNotOptedIn))
		Expect(c.Message).To(ContainSubstring(`PersistentVolumeClaim "nothing" of storage.persistentVolumeClaim does not exist`))
		expectNoJob(t, ns, "into-nothing-backup")
	})

	t.Run("an opted-in claim is mounted", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "into-backups", echoKey.Name)
		b.Spec.Storage = pvcStorage("backups")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		job := waitJob(t, ns, "into-backups-backup")
		Expect(job.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", "backups")))
	})
}

// A claim named like an Echo's data claim is not the Echo's data unless
// its release made it: a backup of Echo db does not read claim db-data
// that another workload made (Helm then refuses to install the Echo's
// own, so the name stays the other workload's).
func TestBackupReadsOnlyTheReleasesDataClaim(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createClaim(t, ns, "db-data", map[string]string{"app": "postgres"})
	original := &corev1.PersistentVolumeClaim{}
	Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db-data"}, original)).To(Succeed())
	createEcho(t, newEcho(ns, "db", persistentEcho))

	b := newBackup(ns, "db-1", "db")
	Expect(k8sClient.Create(ctx, b)).To(Succeed())
	c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
	Expect(c.Reason).To(Equal(echov1alpha1.ReasonDataClaimNotOwned))
	Expect(c.Message).To(ContainSubstring(`PersistentVolumeClaim "db-data" is not the data claim of Echo db`))
	expectWarning(t, b, echov1alpha1.EventReasonDataClaimNotOwned, "db-data")
	expectNoJob(t, ns, "db-1-backup")

	// The other workload's claim stays its own: the Echo's release, whose
	// install fails on it and is undone, neither took it over nor deleted
	// it (the API server keeps a deleted claim until its protection
	// finalizer goes: the deletion would show).
	Consistently(func(g Gomega) {
		claim := &corev1.PersistentVolumeClaim{}
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db-data"}, claim)).To(Succeed())
		g.Expect(claim.UID).To(Equal(original.UID))
		g.Expect(claim.DeletionTimestamp).To(BeNil(), "the failed install of Echo db deleted another workload's claim")
		g.Expect(metav1.GetControllerOf(claim)).To(BeNil())
	}, "5s", interval).Should(Succeed())
}
