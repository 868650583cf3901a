package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// TestEchoRestoreFromAStoredBackup: a restore naming a stored backup reads
// the artifact under its key from the storage of its EchoBackupLocation,
// into the backed-up Echo's name; a location that does not exist fails the
// restore with a message saying what to create.
func TestEchoRestoreFromAStoredBackup(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	storage := newBackup(ns, "unused", "unused").Spec.Storage
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "offsite"},
		Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *storage.S3},
	})).To(Succeed())

	t.Run("the artifact is read from the location's storage", func(t *testing.T) {
		RegisterTestingT(t)
		rs := &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listed"},
			Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{StoredBackup: "offsite.src.web.web-1.v2"}},
		}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		inspect := waitJob(t, ns, "listed-inspect")
		Expect(inspect.Spec.Template.Spec.Containers[0].Args).To(ContainElements(
			"inspect", "--key=src/web/web-1.v2", "--s3-bucket="+storage.S3.Bucket))
		Eventually(func(g Gomega) string { return getRestore(g, client.ObjectKeyFromObject(rs)).Status.EchoName }, timeout, interval).
			Should(Equal("web"))
	})

	t.Run("a missing location fails the restore", func(t *testing.T) {
		RegisterTestingT(t)
		rs := &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lost"},
			Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{StoredBackup: "elsewhere.src.web.web-1"}},
		}
		Expect(k8sClient.Create(ctx, rs)).To(Succeed())
		c := waitRestoreFailed(t, client.ObjectKeyFromObject(rs))
		Expect(c.Reason).To(Equal(echov1alpha1.RestoreReasonBackupNotFound))
		Expect(c.Message).To(ContainSubstring(`EchoBackupLocation "elsewhere" of stored backup elsewhere.src.web.web-1 does not exist in namespace ` + ns))
	})

	t.Run("admission refuses a name that is not a stored backup's", func(t *testing.T) {
		RegisterTestingT(t)
		err := k8sClient.Create(ctx, &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
			Spec:       echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{StoredBackup: "offsite.web"}},
		})
		Expect(err).To(MatchError(ContainSubstring("source.storedBackup is the name kubectl get storedbackups shows")))
		err = k8sClient.Create(ctx, &echov1alpha1.EchoRestore{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{
				StoredBackup: "offsite.src.web.web-1", BackupName: "web-1"}},
		})
		Expect(err).To(MatchError(ContainSubstring("set exactly one of source.backupName, source.storedBackup and source.storage")))
	})
}
