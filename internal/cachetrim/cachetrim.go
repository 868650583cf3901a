package cachetrim

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// MaxObjectBytes is the largest object, in its protobuf encoding, that the
// cache keeps whole. The operator's own objects (the chart's, the data
// mover's Jobs and pods) are a few KiB; anything larger was made or
// inflated by someone else, and is kept as a stub.
const MaxObjectBytes = 32 << 10

// maxStubLabels bounds the labels a stub keeps.
const maxStubLabels = 16

// stubAnnotation marks a stub. Its key holds a space, which no annotation
// stored by the API server can: nobody can make a whole object pass for a
// stub, and a stub is never taken for the object.
const stubAnnotation = "echo.dev/cache stub"

// sizer is what API types generated for protobuf implement.
type sizer interface{ Size() int }

// Bounded returns a cache transform that strips managed fields and keeps
// an object whole only up to max bytes; a larger one becomes a stub
// (Stub). Objects of other types pass through.
func Bounded(max int) func(any) (any, error) {
	return func(in any) (any, error) {
		obj, ok := in.(runtime.Object)
		if !ok {
			return in, nil
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return in, nil //nolint:nilerr // not an object with metadata: nothing to bound
		}
		m.SetManagedFields(nil)
		if s, ok := obj.(sizer); ok && s.Size() > max {
			return Stub(obj), nil
		}
		return obj, nil
	}
}

// MetadataOnly returns a cache transform that keeps every object as a
// stub: for kinds whose existence is all the operator reads.
func MetadataOnly() func(any) (any, error) {
	return func(in any) (any, error) {
		if obj, ok := in.(runtime.Object); ok && !IsStub(obj) {
			return Stub(obj), nil
		}
		return in, nil
	}
}

// Stub is an empty object of obj's type with obj's identity: name,
// namespace, UID, resource version, generation, creation and deletion
// times, its controller reference and up to maxStubLabels labels of the
// prefixes the operator selects on. A stub answers whether an object
// exists and who controls it, and nothing else.
func Stub(obj runtime.Object) runtime.Object {
	in, err := meta.Accessor(obj)
	if err != nil {
		return obj
	}
	out := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
	m, _ := meta.Accessor(out)
	m.SetName(in.GetName())
	m.SetNamespace(in.GetNamespace())
	m.SetUID(in.GetUID())
	m.SetResourceVersion(in.GetResourceVersion())
	m.SetGeneration(in.GetGeneration())
	m.SetCreationTimestamp(in.GetCreationTimestamp())
	m.SetDeletionTimestamp(in.GetDeletionTimestamp())
	if owner := metav1.GetControllerOfNoCopy(in); owner != nil {
		m.SetOwnerReferences([]metav1.OwnerReference{*owner})
	}
	m.SetLabels(stubLabels(in.GetLabels()))
	m.SetAnnotations(map[string]string{stubAnnotation: "the cache keeps only this object's identity"})
	return out
}

// IsStub reports whether obj is a stub made by Stub.
func IsStub(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	_, ok := m.GetAnnotations()[stubAnnotation]
	return ok
}

// The label keys a stub keeps: those of the chart, the operator and the
// Job controller (by prefix), and Helm's release records.
var (
	stubLabelPrefixes = []string{"app.kubernetes.io/", "echo.dev/", "batch.kubernetes.io/"}
	stubLabelKeys     = map[string]bool{"controller-uid": true, "job-name": true, "owner": true, "name": true, "status": true, "version": true}
)

// stubLabels are the labels of in a stub keeps, the first maxStubLabels
// in key order.
func stubLabels(in map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if len(out) == maxStubLabels {
			break
		}
		if stubLabelKeys[k] || slices.ContainsFunc(stubLabelPrefixes, func(p string) bool { return strings.HasPrefix(k, p) }) {
			out[k] = in[k]
		}
	}
	return out
}
