package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/olderschema"
)

// An EchoBackupSchedule stored with a value its Go type cannot hold (a
// maxAge of "7d", which an older schema admitted) is isolated by the
// running operator: every other object keeps reconciling, the owner is told
// what to fix, and the schedule is reconciled once fixed.
func TestUndecodableObjectIsIsolated(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	goodKey := types.NamespacedName{Namespace: ns, Name: "nightly"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: goodKey.Name},
		Spec:       echov1alpha1.EchoBackupScheduleSpec{Schedule: "@every 1h", Template: newBackup(ns, "unused", "web").Spec},
	})).To(Succeed())
	waitScheduleReconciled(t, goodKey)

	bad := storeUndecodableSchedule(t, ns, "weekly")
	badKey := client.ObjectKeyFromObject(bad)

	t.Run("the owner is told what to fix", func(t *testing.T) {
		RegisterTestingT(t)
		Eventually(func(g Gomega) {
			ev, found := undecodableEvent(g, bad)
			g.Expect(found).To(BeTrue(), "no Event reports the schedule undecodable")
			g.Expect(ev.Type).To(Equal(corev1.EventTypeWarning))
			g.Expect(ev.Action).To(Equal(echov1alpha1.EventActionDecoding))
			g.Expect(ev.Note).To(ContainSubstring("spec.retention.maxAge"))
			g.Expect(ev.Note).To(ContainSubstring(`"7d"`))
			g.Expect(ev.Note).To(ContainSubstring("kubectl edit echobackupschedule weekly -n " + ns))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("every other object keeps reconciling", func(t *testing.T) {
		RegisterTestingT(t)
		// The schedule informer went through two schema changes with
		// the bad schedule stored; a change only the controller
		// answers shows it synced and running.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			s := getSchedule(Default, goodKey)
			s.Spec.Schedule = "@every 2h"
			return k8sClient.Update(ctx, s)
		})
		Expect(err).NotTo(HaveOccurred())
		waitScheduleReconciled(t, goodKey)

		createEcho(t, newEcho(ns, "web"))
		rollOut(t, types.NamespacedName{Namespace: ns, Name: "web"})

		stored := &unstructured.Unstructured{}
		stored.SetGroupVersionKind(bad.GroupVersionKind())
		Expect(k8sClient.Get(ctx, badKey, stored)).To(Succeed())
		Expect(stored.Object).NotTo(HaveKey("status"), "the undecodable schedule was reconciled")
	})

	t.Run("once fixed, it is reconciled", func(t *testing.T) {
		RegisterTestingT(t)
		fix := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"retention":{"maxAge":"168h"}}}`))
		Expect(k8sClient.Patch(ctx, bad, fix)).To(Succeed())
		waitScheduleReconciled(t, badKey)
	})
}

// waitScheduleReconciled waits for a schedule's controller to report its
// current generation Ready.
func waitScheduleReconciled(t *testing.T, key types.NamespacedName) {
	t.Helper()
	Eventually(func(g Gomega) {
		s := getSchedule(g, key)
		g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
		g.Expect(meta.IsStatusConditionTrue(s.Status.Conditions, echov1alpha1.ScheduleConditionReady)).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

// undecodableEvent returns the Event that reports obj undecodable.
func undecodableEvent(g Gomega, obj client.Object) (eventsv1.Event, bool) {
	for _, ev := range objectEvents(g, obj.GetNamespace(), obj.GetName()) {
		if ev.Regarding.UID == obj.GetUID() && ev.Reason == echov1alpha1.EventReasonUndecodableObject {
			return ev, true
		}
	}
	return eventsv1.Event{}, false
}

// storeUndecodableSchedule stores an EchoBackupSchedule whose
// spec.retention.maxAge, "7d", is no Go duration: the CRD's schema is
// loosened for the create, as an older schema was, then restored.
func storeUndecodableSchedule(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	bad := object("EchoBackupSchedule", ns, name, map[string]any{
		"schedule":  "@every 1h",
		"retention": map[string]any{"maxAge": "7d"},
		"template":  map[string]any{"echoName": "web", "storage": s3Storage()},
	})
	restore := loosenMaxAge(t)
	defer restore()
	// The API server takes a changed schema up asynchronously.
	Eventually(func() error { return k8sClient.Create(context.Background(), bad) }, timeout, interval).Should(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), bad) })
	return bad
}

var crdKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// loosenMaxAge drops from the EchoBackupSchedule CRD every rule that could
// refuse a maxAge of "7d", whatever rules the CRD carries: the validations
// of the property itself and the CEL rules of its ancestors that mention
// it. It returns the function that restores the CRD.
func loosenMaxAge(t *testing.T) (restore func()) {
	t.Helper()
	var strict []any
	updateScheduleCRD(t, func(crd *unstructured.Unstructured) {
		versions, _, err := unstructured.NestedSlice(crd.Object, "spec", "versions")
		Expect(err).NotTo(HaveOccurred())
		strict = versions
		loose := olderschema.LooseMaxAge(versions)
		Expect(unstructured.SetNestedSlice(crd.Object, loose, "spec", "versions")).To(Succeed())
	})
	return func() {
		updateScheduleCRD(t, func(crd *unstructured.Unstructured) {
			Expect(unstructured.SetNestedSlice(crd.Object, strict, "spec", "versions")).To(Succeed())
		})
	}
}

func updateScheduleCRD(t *testing.T, mutate func(*unstructured.Unstructured)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdKind)
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Name: "echobackupschedules.echo.dev"}, crd); err != nil {
			return err
		}
		mutate(crd)
		return k8sClient.Update(context.Background(), crd)
	})
	Expect(err).NotTo(HaveOccurred(), "updating the EchoBackupSchedule CRD")
}
