package controllers

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// TestDataClaimOwned: an Echo's data claim is mounted only when its
// release made it: Helm's annotations name the release, and its
// controller is the Echo, by UID.
func TestDataClaimOwned(t *testing.T) {
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db", UID: "echo-uid"},
		Spec: echov1alpha1.EchoSpec{Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}}}
	helm := map[string]string{chart.ReleaseNameAnnotation: "db", chart.ReleaseNamespaceAnnotation: "team"}
	controller := func(uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: echov1alpha1.GroupVersion.String(), Kind: "Echo", Name: "db", UID: uid, Controller: ptr.To(true)}}
	}
	for _, tc := range []struct {
		name   string
		claim  *corev1.PersistentVolumeClaim // nil: none
		refuse string                        // empty: allowed
	}{
		{"the release's claim", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: helm, OwnerReferences: controller("echo-uid")}}, ""},
		{"another workload's claim of that name", &corev1.PersistentVolumeClaim{}, `PersistentVolumeClaim "db-data" is not the data claim of Echo db`},
		{"Helm's annotations without the Echo as controller", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: helm}}, "is not the data claim"},
		{"another release's claim", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{
			Annotations: map[string]string{chart.ReleaseNameAnnotation: "other", chart.ReleaseNamespaceAnnotation: "team"}, OwnerReferences: controller("echo-uid")}},
			"is not the data claim"},
		{"the claim of an earlier Echo of the same name", &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: helm, OwnerReferences: controller("old-uid")}},
			"is not the data claim"},
		{"no claim yet: the release is about to create it, and the pod waits for it", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme)
			if tc.claim != nil {
				tc.claim.Namespace, tc.claim.Name = "team", "db-data"
				b = b.WithObjects(tc.claim)
			}
			err := dataClaimOwned(context.Background(), b.Build(), echo)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			refused, ok := asOptInRefusal(err)
			if !ok || refused.reason() != echov1alpha1.ReasonDataClaimNotOwned || !strings.Contains(err.Error(), tc.refuse) {
				t.Fatalf("err = %v, want %s saying %q", err, echov1alpha1.ReasonDataClaimNotOwned, tc.refuse)
			}
		})
	}
	t.Run("an Echo without persistence mounts no claim", func(t *testing.T) {
		ephemeral := echo.DeepCopy()
		ephemeral.Spec.Persistence = nil
		if err := dataClaimOwned(context.Background(), fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build(), ephemeral); err != nil {
			t.Fatal(err)
		}
	})
}
