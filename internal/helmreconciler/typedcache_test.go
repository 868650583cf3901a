package helmreconciler

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// fakeCache serves reads from a fake client and records which informers
// were asked for.
type fakeCache struct {
	informertest.FakeInformers
	client.Reader
	informersFor []runtime.Object
}

func (f *fakeCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return f.Reader.Get(ctx, key, obj, opts...)
}

func (f *fakeCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return f.Reader.List(ctx, list, opts...)
}

func (f *fakeCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	f.informersFor = append(f.informersFor, obj)
	return f.FakeInformers.GetInformer(ctx, obj, opts...)
}

func TestTypedCache(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := echov1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	echo := &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", Labels: map[string]string{"team": "a"}},
		Spec:       echov1alpha1.EchoSpec{Message: "hello"},
		Status:     echov1alpha1.EchoStatus{DeployedRelease: &echov1alpha1.DeployedRelease{Name: "web"}},
	}
	inner := &fakeCache{FakeInformers: informertest.FakeInformers{Scheme: scheme}, Reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(echo).Build()}
	gvk := echov1alpha1.GroupVersion.WithKind("Echo")
	c := &typedCache{Cache: inner, scheme: scheme, kinds: map[schema.GroupVersionKind]bool{
		gvk: true, echov1alpha1.GroupVersion.WithKind("EchoList"): true,
	}}
	ctx := context.Background()

	t.Run("an unstructured read is served typed", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := c.Get(ctx, client.ObjectKeyFromObject(echo), u); err != nil {
			t.Fatal(err)
		}
		if u.GroupVersionKind() != gvk || u.GetLabels()["team"] != "a" {
			t.Errorf("got %v with labels %v", u.GroupVersionKind(), u.GetLabels())
		}
		if msg, _, _ := unstructured.NestedString(u.Object, "spec", "message"); msg != "hello" {
			t.Errorf("spec.message = %q", msg)
		}
		if name, _, _ := unstructured.NestedString(u.Object, "status", "deployedRelease", "name"); name != "web" {
			t.Errorf("status.deployedRelease.name = %q", name)
		}
	})

	t.Run("an unstructured list is served typed", func(t *testing.T) {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("EchoList"))
		if err := c.List(ctx, l, client.InNamespace("ns")); err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 1 || l.Items[0].GroupVersionKind() != gvk || l.Items[0].GetName() != "web" {
			t.Errorf("got %+v", l.Items)
		}
	})

	t.Run("an unstructured informer is the typed one", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if _, err := c.GetInformer(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, typed := inner.informersFor[len(inner.informersFor)-1].(*echov1alpha1.Echo); !typed {
			t.Errorf("informer asked for %T, want *Echo", inner.informersFor[len(inner.informersFor)-1])
		}
	})

	t.Run("other kinds pass through", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
		if _, err := c.GetInformer(ctx, u); err != nil {
			t.Fatal(err)
		}
		if _, still := inner.informersFor[len(inner.informersFor)-1].(*unstructured.Unstructured); !still {
			t.Error("an unstructured informer of another kind was replaced")
		}
	})
}
