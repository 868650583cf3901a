package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The Secrets a backup, an artifact deletion or a restore names as its
// storage's credentials or CA bundle reach a data mover Job only when they
// carry echo.dev/storage-credentials=true.

var storageSecretOptedIn = map[string]string{echov1alpha1.StorageSecretLabel: "true"}

// createSecret creates a Secret as its owner would, with data under keys,
// or replaces the labels and data of one that exists (newNamespace
// creates s3-credentials).
func createSecret(t *testing.T, ns, name string, labels map[string]string, keys ...string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, StringData: map[string]string{}}
	for _, k := range keys {
		s.StringData[k] = "value of " + k
	}
	err := k8sClient.Create(context.Background(), s)
	if apierrors.IsAlreadyExists(err) {
		old := &corev1.Secret{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(s), old)).To(Succeed())
		s.ResourceVersion = old.ResourceVersion
		err = k8sClient.Update(context.Background(), s)
	}
	Expect(err).To(Succeed())
}

// setSecretLabels replaces the labels of a Secret, as its owner would.
func setSecretLabels(t *testing.T, ns, name string, labels map[string]string) {
	t.Helper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &corev1.Secret{}
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
			return err
		}
		s.Labels = labels
		return k8sClient.Update(context.Background(), s)
	})).To(Succeed())
}

// withCredentials names a Secret and its keys as the S3 credentials, and
// optionally a CA bundle Secret.
func withCredentials(storage *echov1alpha1.BackupStorage, secret, key, ca string) {
	storage.S3.CredentialsSecretRef = &echov1alpha1.S3CredentialsSecretRef{Name: secret, AccessKeyIDKey: key, SecretAccessKeyKey: key}
	if ca != "" {
		storage.S3.CABundle = &echov1alpha1.SecretKeyRef{Name: ca, Key: "ca.crt"}
	}
}

// waitBackupFailed waits for a backup to fail and returns its Failed
// condition.
func waitBackupFailed(t *testing.T, key types.NamespacedName) metav1.Condition {
	t.Helper()
	var c *metav1.Condition
	Eventually(func(g Gomega) {
		c = meta.FindStatusCondition(getBackup(g, key).Status.Conditions, echov1alpha1.BackupConditionFailed)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	return *c
}

// expectSecretNotOptedInEvent waits for the Warning Event SecretNotOptedIn
// on obj, whose note contains each of says.
func expectSecretNotOptedInEvent(t *testing.T, obj client.Object, says ...string) {
	t.Helper()
	Eventually(func(g Gomega) {
		found := 0
		for _, ev := range objectEvents(g, obj.GetNamespace(), obj.GetName()) {
			if ev.Reason != echov1alpha1.EventReasonSecretNotOptedIn {
				continue
			}
			found++
			g.Expect(ev).To(operatorEvent(obj, corev1.EventTypeWarning, echov1alpha1.EventReasonSecretNotOptedIn))
			g.Expect(ev.Action).To(Equal(echov1alpha1.EventActionCheckingStorageSecrets))
			for _, s := range says {
				g.Expect(ev.Note).To(ContainSubstring(s))
			}
		}
		g.Expect(found).To(BeNumerically(">", 0), "no Event %s", echov1alpha1.EventReasonSecretNotOptedIn)
	}, timeout, interval).Should(Succeed())
}

func TestBackupNeedsOptedInStorageSecrets(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "journal"}
	createEcho(t, newEcho(ns, echoKey.Name, persistentEcho))
	rollOut(t, echoKey)
	Eventually(func(g Gomega) metav1.ConditionStatus {
		return conditionStatus(getEcho(g, echoKey), echov1alpha1.EchoConditionDeployed)
	}, timeout, interval).Should(Equal(metav1.ConditionTrue))
	createSecret(t, ns, "db-credentials", map[string]string{"app": "db"}, "password")
	createSecret(t, ns, "s3-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	createSecret(t, ns, "tls", nil, "ca.crt")

	t.Run("credentials without the label fail the backup, and no Job starts", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "leak", echoKey.Name)
		withCredentials(&b.Spec.Storage, "db-credentials", "password", "")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
		Expect(c.Reason).To(Equal(echov1alpha1.ReasonSecretNotOptedIn))
		fix := "kubectl label secret -n " + ns + " db-credentials echo.dev/storage-credentials=true"
		Expect(c.Message).To(ContainSubstring(`Secret "db-credentials" has no label echo.dev/storage-credentials=true`))
		Expect(c.Message).To(ContainSubstring(fix + ", then back up again: this EchoBackup has failed for good"))
		Expect(getBackup(Default, client.ObjectKeyFromObject(b)).Status.Error).To(Equal(c.Message))
		expectSecretNotOptedInEvent(t, b, fix)
		expectNoJob(t, ns, "leak-backup")

		// The failure is for good: labelling the Secret afterwards starts
		// nothing for this backup.
		setSecretLabels(t, ns, "db-credentials", storageSecretOptedIn)
		advanceAndPoke(t, &echov1alpha1.EchoBackup{}, client.ObjectKeyFromObject(b), 0)
		expectNoJob(t, ns, "leak-backup")
		setSecretLabels(t, ns, "db-credentials", map[string]string{"app": "db"})
	})

	t.Run("a CA bundle without the label fails the backup", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "with-ca", echoKey.Name)
		withCredentials(&b.Spec.Storage, "s3-credentials", "AWS_ACCESS_KEY_ID", "tls")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		c := waitBackupFailed(t, client.ObjectKeyFromObject(b))
		Expect(c.Reason).To(Equal(echov1alpha1.ReasonSecretNotOptedIn))
		Expect(c.Message).To(ContainSubstring(`Secret "tls" has no label`))
		Expect(c.Message).NotTo(ContainSubstring(`"s3-credentials"`))
		expectNoJob(t, ns, "with-ca-backup")
	})

	t.Run("opted-in credentials reach the Job", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "fine", echoKey.Name)
		withCredentials(&b.Spec.Storage, "s3-credentials", "AWS_ACCESS_KEY_ID", "")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		job := waitJob(t, ns, "fine-backup")
		for _, e := range storageEnv(Default, job.Spec.Template.Spec.Containers[0].Env) {
			Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("s3-credentials"))
		}
		Expect(meta.FindStatusCondition(getBackup(Default, client.ObjectKeyFromObject(b)).Status.Conditions, echov1alpha1.BackupConditionFailed)).To(BeNil())
	})

}

func TestArtifactDeletionNeedsOptedInStorageSecrets(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	echoKey := types.NamespacedName{Namespace: ns, Name: "web"}
	createEcho(t, newEcho(ns, echoKey.Name))
	rollOut(t, echoKey)
	createSecret(t, ns, "s3-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	b := newDeleteBackup(ns, "old", echoKey.Name)
	completeBackup(t, b)

	// The label is taken off after the backup stored its artifact.
	setSecretLabels(t, ns, "s3-credentials", nil)
	deleteBackup(t, b)
	expectSecretNotOptedInEvent(t, b, "Could not delete the artifact at s3://echo-backups/"+ns+"/web/old",
		"kubectl label secret -n "+ns+" s3-credentials echo.dev/storage-credentials=true",
		"if not, remove the finalizer of the EchoBackup to let it go and keep the artifact")
	expectNoJob(t, ns, "old-delete")
	expectHeld(t, b)

	// Once it is back, the next attempt deletes the artifact.
	setSecretLabels(t, ns, "s3-credentials", storageSecretOptedIn)
	advanceAndPoke(t, &echov1alpha1.EchoBackup{}, client.ObjectKeyFromObject(b), 0)
	waitJob(t, ns, "old-delete")
}

func TestRestoreNeedsOptedInStorageSecrets(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createSecret(t, ns, "db-credentials", nil, "password")
	createSecret(t, ns, "s3-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	restore := func(name, secret, key string) *echov1alpha1.EchoRestore {
		storage := newBackup(ns, "unused", "unused").Spec.Storage
		withCredentials(&storage, secret, key, "")
		rs := &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{Storage: &storage, Key: "src/web/web-1"}, EchoName: "web"},
		}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		return rs
	}

	t.Run("credentials without the label fail the restore, and no Job starts", func(t *testing.T) {
		RegisterTestingT(t)
		rs := restore("leak", "db-credentials", "password")
		key := client.ObjectKeyFromObject(rs)
		c := waitRestoreFailed(t, key)
		Expect(c.Reason).To(Equal(echov1alpha1.ReasonSecretNotOptedIn))
		fix := "kubectl label secret -n " + ns + " db-credentials echo.dev/storage-credentials=true"
		Expect(c.Message).To(ContainSubstring(fix + ", then restore again: this EchoRestore has failed for good"))
		expectSecretNotOptedInEvent(t, rs, fix)
		expectNoJob(t, ns, "leak-inspect")
		// Ended as any failed restore: its finalizer goes, nothing was held.
		Eventually(func(g Gomega) []string { return getRestore(g, key).Finalizers }, timeout, interval).Should(BeEmpty())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &echov1alpha1.Echo{})).NotTo(Succeed(), "no Echo was created")
	})

	t.Run("opted-in credentials reach the inspect Job", func(t *testing.T) {
		RegisterTestingT(t)
		rs := restore("fine", "s3-credentials", "AWS_ACCESS_KEY_ID")
		job := waitJob(t, ns, "fine-inspect")
		for _, e := range storageEnv(Default, job.Spec.Template.Spec.Containers[0].Env) {
			Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("s3-credentials"))
		}
		Expect(meta.FindStatusCondition(getRestore(Default, client.ObjectKeyFromObject(rs)).Status.Conditions, echov1alpha1.RestoreConditionFailed)).To(BeNil())
	})
}

// A final backup refused for its Secret keeps the Echo, as any failed final
// backup does, and says what to label; once labelled, deleting the failed
// backup takes a new one.
func TestFinalBackupNeedsOptedInStorageSecrets(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "precious"}
	createSecret(t, ns, "s3-credentials", nil, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	createEcho(t, newEcho(ns, key.Name, withFinalBackup))
	rollOut(t, key)

	Expect(k8sClient.Delete(ctx, getEcho(Default, key))).To(Succeed())
	b := finalBackupOf(t, key)
	Expect(waitBackupFailed(t, client.ObjectKeyFromObject(&b)).Reason).To(Equal(echov1alpha1.ReasonSecretNotOptedIn))
	Eventually(func(g Gomega) []string {
		return eventMessages(g, ns, key.Name, echov1alpha1.EventReasonFinalBackupFailed)
	}, timeout, interval).Should(ContainElement(And(
		ContainSubstring("kubectl label secret -n "+ns+" s3-credentials echo.dev/storage-credentials=true"),
		ContainSubstring("the Echo is kept"))))
	expectNoJob(t, ns, b.Name+"-backup")
	Expect(k8sClient.Get(ctx, key, &echov1alpha1.Echo{})).To(Succeed(), "the Echo is kept")

	setSecretLabels(t, ns, "s3-credentials", storageSecretOptedIn)
	Expect(k8sClient.Delete(ctx, &b)).To(Succeed())
	Eventually(func(g Gomega) {
		again := finalBackupOf(t, key)
		g.Expect(again.UID).NotTo(Equal(b.UID))
	}, timeout, interval).Should(Succeed())
	waitJob(t, ns, b.Name+"-backup")
}
