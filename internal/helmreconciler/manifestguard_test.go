package helmreconciler

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func testMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Service"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	m.Add(corev1.SchemeGroupVersion.WithKind("Namespace"), meta.RESTScopeRoot)
	m.Add(rbacv1.SchemeGroupVersion.WithKind("ClusterRoleBinding"), meta.RESTScopeRoot)
	return m
}

func TestManifestObjectsGuard(t *testing.T) {
	guard := newManifestGuard("team-a", map[schema.GroupVersionKind]bool{
		appsv1.SchemeGroupVersion.WithKind("Deployment"): true,
		corev1.SchemeGroupVersion.WithKind("Service"):    true,
	})
	const svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n"
	tests := []struct {
		name     string
		manifest string
		wantErr  string
	}{
		{"chart kinds without a namespace land in the release's", "---\n# Source: a\n" + svc +
			"---\n# Source: b\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n", ""},
		{"the release's namespace named explicitly", "---\n# Source: a\n" + svc + "  namespace: team-a\n", ""},
		{"another namespace", "---\n# Source: a\n" + svc + "  namespace: kube-system\n", "Service web in namespace kube-system"},
		{"another kind", "---\n# Source: a\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", "ConfigMap x in namespace team-a"},
		{"a cluster-scoped object", "---\n# Source: a\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: tenant-admin\n",
			"ClusterRoleBinding.rbac.authorization.k8s.io tenant-admin cluster-wide"},
		{"a namespace", "---\n# Source: a\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n", "Namespace x cluster-wide"},
		{"one bad object refuses the whole manifest", "---\n# Source: a\n" + svc + "---\n# Source: b\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: kube-system\n",
			"ConfigMap x in namespace kube-system"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := manifestObjects(tt.manifest, guard, testMapper())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range objs {
					if o.GetNamespace() != "team-a" {
						t.Errorf("%s %s placed in %q", o.GetKind(), o.GetName(), o.GetNamespace())
					}
				}
				return
			}
			var unsafe *UnsafeManifestError
			if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), tt.wantErr) || objs != nil {
				t.Fatalf("got %d objects and error %v; want none and an UnsafeManifestError containing %q", len(objs), err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), "apps/Deployment") && !strings.Contains(err.Error(), "Deployment.apps") {
				t.Errorf("the error does not say what is allowed: %v", err)
			}
		})
	}
}
