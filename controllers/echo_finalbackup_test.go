package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

func withFinalBackup(e *echov1alpha1.Echo) {
	storage := newBackup(e.Namespace, "unused", e.Name).Spec.Storage
	e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true}
	e.Spec.Backup = &echov1alpha1.EchoBackupPolicy{BeforeDelete: &echov1alpha1.FinalBackupSpec{Enabled: true, Storage: &storage}}
}

// finalBackupOf waits for the final backup of an Echo to exist.
func finalBackupOf(t *testing.T, key types.NamespacedName) echov1alpha1.EchoBackup {
	t.Helper()
	var b echov1alpha1.EchoBackup
	Eventually(func(g Gomega) {
		list := &echov1alpha1.EchoBackupList{}
		g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(key.Namespace),
			client.MatchingLabels{echov1alpha1.FinalBackupOfLabel: key.Name})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		b = list.Items[0]
	}, timeout, interval).Should(Succeed())
	return b
}

func setBackupCondition(t *testing.T, b echov1alpha1.EchoBackup, condType, message string) {
	t.Helper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &echov1alpha1.EchoBackup{}
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(&b), latest); err != nil {
			return err
		}
		meta.SetStatusCondition(&latest.Status.Conditions, metav1.Condition{Type: condType, Status: metav1.ConditionTrue, Reason: "Test", Message: message})
		latest.Status.Error = message
		return k8sClient.Status().Update(context.Background(), latest)
	})).To(Succeed())
}

func TestFinalBackupHoldsTheDeletionUntilItCompletes(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "precious"}
	createEcho(t, newEcho(ns, key.Name, withFinalBackup))
	rollOut(t, key)

	Expect(k8sClient.Delete(ctx, getEcho(Default, key))).To(Succeed())
	expectFinalBackupHolds(t, key)
	b := finalBackupOf(t, key)
	Expect(b.OwnerReferences).To(BeEmpty(), "the final backup outlives its Echo")
	Expect(b.Spec.EchoName).To(Equal(key.Name))

	setBackupCondition(t, b, echov1alpha1.BackupConditionComplete, "stored")
	expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	expectGone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&b), &echov1alpha1.EchoBackup{})).To(Succeed(), "the final backup is kept")
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
		Should(ContainElements(echov1alpha1.EventReasonFinalBackupStarted, echov1alpha1.EventReasonFinalBackupCompleted))
}

// expectFinalBackupHolds waits for the final backup's Job of an Echo being
// deleted and checks that nothing of the Echo goes while it runs.
func expectFinalBackupHolds(t *testing.T, key types.NamespacedName) {
	t.Helper()
	ctx := context.Background()
	waitJob(t, key.Namespace, finalBackupOf(t, key).Name+"-backup")
	Consistently(func(g Gomega) {
		g.Expect(getEcho(g, key).DeletionTimestamp).NotTo(BeNil())
		g.Expect(k8sClient.Get(ctx, key, &appsv1.Deployment{})).To(Succeed())
		g.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: key.Namespace, Name: chart.DataClaimName(key.Name)}, &corev1.PersistentVolumeClaim{})).To(Succeed())
	}, "1s", interval).Should(Succeed())
}

// TestFinalBackupTurnedOnJustBeforeDelete sends the delete right after the
// change that turns the final backup on, as a script would: the backup
// follows the spec the Echo had when it was deleted, whatever the timing.
// The reverse, turned off just before the delete, takes none.
func TestFinalBackupTurnedOnJustBeforeDelete(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	on := types.NamespacedName{Namespace: ns, Name: "turned-on"}
	off := types.NamespacedName{Namespace: ns, Name: "turned-off"}
	createEcho(t, newEcho(ns, on.Name, func(e *echov1alpha1.Echo) { e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true} }))
	createEcho(t, newEcho(ns, off.Name, withFinalBackup))
	rollOut(t, on)
	rollOut(t, off)

	changeThenDelete(t, on, withFinalBackup)
	changeThenDelete(t, off, func(e *echov1alpha1.Echo) { e.Spec.Backup.BeforeDelete.Enabled = false })

	expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: off.Name}})
	list := &echov1alpha1.EchoBackupList{}
	Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{echov1alpha1.FinalBackupOfLabel: off.Name})).To(Succeed())
	Expect(list.Items).To(BeEmpty(), "a final backup turned off before the delete is not taken")

	expectFinalBackupHolds(t, on)
	setBackupCondition(t, finalBackupOf(t, on), echov1alpha1.BackupConditionComplete, "stored")
	expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: on.Name}})
}

// changeThenDelete updates an Echo and deletes it straight after, before
// any controller can have acted on the change.
func changeThenDelete(t *testing.T, key types.NamespacedName, change func(*echov1alpha1.Echo)) {
	t.Helper()
	updateEcho(t, key, change)
	Expect(k8sClient.Delete(context.Background(), &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})).To(Succeed())
}

func TestFailedFinalBackupKeepsTheEchoUntilGivenUp(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "stuck"}
	createEcho(t, newEcho(ns, key.Name, withFinalBackup))
	rollOut(t, key)

	Expect(k8sClient.Delete(ctx, getEcho(Default, key))).To(Succeed())
	setBackupCondition(t, finalBackupOf(t, key), echov1alpha1.BackupConditionFailed, "bucket not found")
	Eventually(func(g Gomega) []string { return eventReasons(g, ns, key.Name) }, timeout, interval).
		Should(ContainElement(echov1alpha1.EventReasonFinalBackupFailed))
	Consistently(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, key, &appsv1.Deployment{})).To(Succeed(), "nothing is removed after a failed final backup")
	}, "1s", interval).Should(Succeed())

	updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Backup.BeforeDelete.Enabled = false })
	expectGone(t, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
	expectGone(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})
}

// TestFinalBackupAddsNoFinalizer: the Helm reconciler's finalizer holds an
// Echo at the uninstall gate, so the final backup needs none of its own;
// the one earlier versions added is removed.
func TestFinalBackupAddsNoFinalizer(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	fresh := types.NamespacedName{Namespace: ns, Name: "fresh"}
	upgraded := types.NamespacedName{Namespace: ns, Name: "upgraded"}
	createEcho(t, newEcho(ns, fresh.Name, withFinalBackup))
	createEcho(t, newEcho(ns, upgraded.Name, withFinalBackup, func(e *echov1alpha1.Echo) {
		e.Finalizers = []string{echov1alpha1.FinalBackupFinalizer}
	}))
	rollOut(t, fresh)
	Eventually(func(g Gomega) []string { return getEcho(g, upgraded).Finalizers }, timeout, interval).
		Should(And(Not(ContainElement(echov1alpha1.FinalBackupFinalizer)), ContainElement("uninstall-helm-release")))
	Consistently(func(g Gomega) []string { return getEcho(g, fresh).Finalizers }, "500ms", interval).
		Should(Equal([]string{"uninstall-helm-release"}), "a finalizer only when there is work outside the object graph")
}
