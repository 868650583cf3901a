package helmreconciler

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestManifestMemo(t *testing.T) {
	kinds := map[schema.GroupVersionKind]bool{
		appsv1.SchemeGroupVersion.WithKind("Deployment"): true,
		corev1.SchemeGroupVersion.WithKind("Service"):    true,
	}
	teamA, teamB := newManifestGuard("team-a", kinds), newManifestGuard("team-b", kinds)
	const web = "---\n# Source: a\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"
	const api = "---\n# Source: a\napiVersion: v1\nkind: Service\nmetadata:\n  name: api\n"
	const foreign = "---\n# Source: a\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: kube-system\n"
	m := newManifestMemo()

	first, err := m.objects(web, teamA, testMapper())
	if err != nil {
		t.Fatal(err)
	}
	again, err := m.objects(web, teamA, testMapper())
	if err != nil || len(again) != 1 || again[0] != first[0] {
		t.Fatalf("the same manifest in the same namespace was decoded again (or failed: %v)", err)
	}
	other, err := m.objects(web, teamB, testMapper())
	if err != nil || other[0] == first[0] || other[0].GetNamespace() != "team-b" {
		t.Fatalf("the manifest of another namespace shares objects, or landed in %q (%v)", other[0].GetNamespace(), err)
	}
	changed, err := m.objects(api, teamA, testMapper())
	if err != nil || changed[0].GetName() != "api" {
		t.Fatalf("a changed manifest gave %v (%v)", changed, err)
	}
	for range 2 {
		if objs, err := m.objects(foreign, teamA, testMapper()); err == nil || objs != nil {
			t.Fatalf("a refused manifest gave %d objects and no error", len(objs))
		}
	}
}
