package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestFinalBackupRelevant(t *testing.T) {
	base := func() *echov1alpha1.Echo {
		return &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Generation: 1, ResourceVersion: "10"}}
	}
	now := metav1.Now()
	tests := []struct {
		name   string
		change func(e *echov1alpha1.Echo)
		want   bool
	}{
		{name: "a status write", change: func(e *echov1alpha1.Echo) {
			e.ResourceVersion = "11"
			e.Status.ReadyReplicas = 1
		}},
		{name: "the release's finalizer added", change: func(e *echov1alpha1.Echo) {
			e.Finalizers = append(e.Finalizers, "uninstall-helm-release")
		}},
		{name: "a label changed", change: func(e *echov1alpha1.Echo) { e.Labels = map[string]string{"team": "a"} }},
		{name: "the spec changed", change: func(e *echov1alpha1.Echo) { e.Generation = 2 }, want: true},
		{name: "deletion began", change: func(e *echov1alpha1.Echo) { e.DeletionTimestamp = &now }, want: true},
		{name: "a finalizer removed", change: func(e *echov1alpha1.Echo) { e.Finalizers = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			old := base()
			old.Finalizers = []string{echov1alpha1.FinalBackupFinalizer}
			updated := old.DeepCopy()
			tt.change(updated)
			g.Expect(finalBackupRelevant.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated})).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(finalBackupRelevant.Create(event.CreateEvent{Object: base()})).To(BeTrue(), "every Echo is seen once")
}
