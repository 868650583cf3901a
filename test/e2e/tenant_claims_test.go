//go:build linux

package e2e

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// A user with only the Echo roles, who may not touch claims or pods, tries
// to reach another workload's claim through the data movers: restore it
// into an Echo of theirs (which would serve its files), back up into it,
// or create an Echo named after it so that a backup of the Echo reads it
// (and its release, failing on the claim, would remove it). The operator
// mounts a claim as storage only when its owner labelled it
// echo.dev/backup-storage=true, and an Echo's data claim only when the
// Echo's release made it: no Job is created, and the claim stays as it
// was.
func TestEchoEditorCannotReachAnotherWorkloadsClaim(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)
	attacker := newEchoEditor(t)
	ns := attacker.ns
	// The payments database's claim, which the attacker may not mount.
	payments := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payments-data", Labels: map[string]string{"app": "payments"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}
	Expect(k8sClient.Create(ctx, payments)).To(Succeed())
	Expect(allowed(attacker.user, ns, "create", "", "pods")).To(BeFalse(), "the Echo roles grant pods")
	claim := echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "payments-data"}}

	t.Run("a restore from the claim into an Echo of theirs", func(t *testing.T) {
		RegisterTestingT(t)
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "steal"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{Storage: &claim, Key: "payments"}, EchoName: "loot"}}
		Expect(attacker.c.Create(ctx, rs)).To(Succeed())
		failed := waitRestoreFailed(t, client.ObjectKeyFromObject(rs))
		Expect(failed.Reason).To(Equal(echov1alpha1.ReasonClaimNotOptedIn), failed.Message)
		expectNoJobNamed(t, ns, "steal-inspect")
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "loot"}, &echov1alpha1.Echo{})).NotTo(Succeed(), "no Echo was created")
	})

	t.Run("an Echo named after the claim, and its backup", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(attacker.c.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "payments"},
			Spec: echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}}})).To(Succeed())
		for name, storage := range map[string]echov1alpha1.BackupStorage{"into-claim": claim, "of-claim": {S3: &echov1alpha1.S3Storage{
			Endpoint: "https://s3.example.test", Bucket: "loot", CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials"}}}} {
			b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: echov1alpha1.EchoBackupSpec{EchoName: "payments", Storage: storage}}
			Expect(attacker.c.Create(ctx, b)).To(Succeed())
			failed := waitBackupFailed(t, client.ObjectKeyFromObject(b))
			// Whichever claim it would mount, its data claim or its storage,
			// is refused.
			Expect(failed.Reason).To(Equal(echov1alpha1.ReasonDataClaimNotOwned), failed.Message)
			Expect(failed.Message).To(ContainSubstring(`PersistentVolumeClaim "payments-data" is not the data claim of Echo payments`))
			expectNoJobNamed(t, ns, name+"-backup")
		}
		// The Echo's release, whose install fails on the claim and is
		// undone each time, neither takes it over nor deletes it.
		Consistently(func(g Gomega) {
			now := &corev1.PersistentVolumeClaim{}
			g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "payments-data"}, now)).To(Succeed())
			g.Expect(now.UID).To(Equal(payments.UID), "the claim was deleted and made anew")
			g.Expect(now.DeletionTimestamp).To(BeNil(), "the claim is being deleted")
			g.Expect(metav1.GetControllerOf(now)).To(BeNil(), "the Echo's release took the claim over")
		}, "5s", interval).Should(Succeed())
	})
}

// expectNoJobNamed checks for a while that no Job of that name exists.
func expectNoJobNamed(t *testing.T, ns, name string) {
	t.Helper()
	Consistently(func() error {
		return k8sClient.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &batchv1.Job{})
	}, "1s", interval).ShouldNot(Succeed(), "Job %s/%s exists", ns, name)
}

// waitRestoreFailed waits for the restore's Failed condition.
func waitRestoreFailed(t *testing.T, key types.NamespacedName) *metav1.Condition {
	t.Helper()
	var failed *metav1.Condition
	Eventually(func(g Gomega) {
		rs := &echov1alpha1.EchoRestore{}
		g.Expect(k8sClient.Get(context.Background(), key, rs)).To(Succeed())
		failed = meta.FindStatusCondition(rs.Status.Conditions, echov1alpha1.RestoreConditionFailed)
		g.Expect(failed).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())
	return failed
}
