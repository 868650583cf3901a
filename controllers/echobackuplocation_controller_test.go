package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func newLocation(ns, name string) *echov1alpha1.EchoBackupLocation {
	return &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{
			Bucket: "offsite-bucket", Endpoint: "https://offsite.example.test", Prefix: "team-a", ForcePathStyle: true,
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "offsite-credentials"},
		}},
	}
}

// backupAt is a backup of the Echo web to the location named loc.
func backupAt(ns, name, loc string) *echov1alpha1.EchoBackup {
	b := newBackup(ns, name, "web")
	b.Spec.Storage = echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: loc}}
	return b
}

// TestBackupsAndRestoresUseALocation: storage.locationRef runs the data
// mover with the location's settings; a missing location fails with what
// to fix; a location in use is deleted only once nothing uses it.
func TestBackupsAndRestoresUseALocation(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "web"))
	createSecret(t, ns, "offsite-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	loc := newLocation(ns, "offsite")
	Expect(k8sClient.Create(ctx, loc)).To(Succeed())
	locKey := client.ObjectKeyFromObject(loc)
	Eventually(func(g Gomega) []string {
		g.Expect(k8sClient.Get(ctx, locKey, loc)).To(Succeed())
		return loc.Finalizers
	}, timeout, interval).Should(ContainElement(echov1alpha1.LocationFinalizer))

	t.Run("a backup runs with the location's settings", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, backupAt(ns, "web-1", "offsite"))).To(Succeed())
		c := waitJob(t, ns, "web-1-backup").Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--s3-bucket=offsite-bucket", "--s3-endpoint=https://offsite.example.test", "--s3-prefix=team-a", "--s3-path-style"))
		for _, e := range storageEnv(Default, c.Env) {
			Expect(e.ValueFrom.SecretKeyRef.Name).To(Equal("offsite-credentials"), "%s comes from the location's Secret", e.Name)
		}
	})

	t.Run("a restore reads through the location", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dr"},
			Spec: echov1alpha1.EchoRestoreSpec{EchoName: "copy", Source: echov1alpha1.RestoreSource{
				Storage: &echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "offsite"}}, Key: "src/web/web-1"}}})).To(Succeed())
		c := waitJob(t, ns, "dr-inspect").Spec.Template.Spec.Containers[0]
		Expect(c.Args).To(ContainElements("--s3-bucket=offsite-bucket", "--s3-prefix=team-a", "--key=src/web/web-1"))
	})

	t.Run("a missing location fails the backup and says what to do", func(t *testing.T) {
		RegisterTestingT(t)
		b := backupAt(ns, "web-lost", "nowhere")
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Eventually(func(g Gomega) {
			got := getBackup(g, client.ObjectKeyFromObject(b))
			g.Expect(got.Status.Phase).To(Equal(echov1alpha1.PhaseFailed))
			g.Expect(got.Status.Reason).To(Equal(echov1alpha1.BackupReasonLocationUnavailable))
			g.Expect(got.Status.Error).To(ContainSubstring(`EchoBackupLocation "nowhere" does not exist in namespace ` + ns))
		}, timeout, interval).Should(Succeed())
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-lost-backup"}, &batchv1.Job{})).NotTo(Succeed())
	})

	t.Run("a location in use is deleted once nothing uses it", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Delete(ctx, loc)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(k8sClient.Get(ctx, locKey, loc)).To(Succeed())
			c := meta.FindStatusCondition(loc.Status.Conditions, echov1alpha1.LocationConditionDeleting)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(echov1alpha1.LocationReasonInUse))
			return c.Message
		}, timeout, interval).Should(And(ContainSubstring("EchoBackup web-1"), ContainSubstring("EchoRestore dr")))
		Eventually(func(g Gomega) []string { return eventReasons(g, ns, loc.Name) }, timeout, interval).
			Should(ContainElement(echov1alpha1.EventReasonLocationInUse))

		late := backupAt(ns, "web-late", "offsite")
		Expect(k8sClient.Create(ctx, late)).To(Succeed())
		Eventually(func(g Gomega) string {
			return getBackup(g, client.ObjectKeyFromObject(late)).Status.Error
		}, timeout, interval).Should(ContainSubstring(`EchoBackupLocation "offsite" of namespace `+ns+` is being deleted`),
			"no new artifact goes to a location being deleted")

		for _, obj := range []client.Object{
			&echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1"}},
			&echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dr"}},
		} {
			Expect(k8sClient.Delete(ctx, obj)).To(Succeed())
			expectGone(t, obj)
		}
		Consistently(func() error { return k8sClient.Get(ctx, locKey, loc) }, "300ms", interval).Should(Succeed(),
			"the failed backup that names it still uses it")
		Expect(k8sClient.Delete(ctx, late)).To(Succeed())
		expectGone(t, loc)
	})
}
