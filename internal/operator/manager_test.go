package operator

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

func TestCacheOptions(t *testing.T) {
	all := cacheOptions(nil, testSigner(t))
	if all.DefaultNamespaces != nil {
		t.Errorf("no namespaces should watch all, got %v", all.DefaultNamespaces)
	}
	if all.DefaultTransform == nil {
		t.Error("managed fields are not stripped")
	}

	some := cacheOptions([]string{"team-a", "team-b"}, testSigner(t))
	if len(some.DefaultNamespaces) != 2 {
		t.Errorf("namespaces = %v, want team-a and team-b", some.DefaultNamespaces)
	}

	selects := func(obj any, set labels.Set) bool {
		for o, by := range all.ByObject {
			if sameType(o, obj) {
				return by.Label.Matches(set)
			}
		}
		t.Fatalf("%T is not scoped", obj)
		return false
	}
	if !selects(&corev1.Secret{}, labels.Set(chart.ReleaseRecordLabels("e"))) || selects(&corev1.Secret{}, labels.Set{"app": "db"}) {
		t.Error("the Secret cache should hold Helm release Secrets only")
	}
	if !selects(&appsv1.Deployment{}, labels.Set{chart.NameLabel: chart.Name}) || selects(&appsv1.Deployment{}, labels.Set{"app": "other"}) {
		t.Error("the Deployment cache should hold what the echo chart renders only")
	}
}

func sameType(a, b any) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }

func testSigner(t *testing.T) *releasetrust.Signer {
	t.Helper()
	s, err := releasetrust.NewSigner(make([]byte, releasetrust.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
