package helmreconciler

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/internal/cachetrim"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
)

// Reconcile repairs drift between a deployed release and the cluster: a
// missing object is created again, and an object whose fields no longer
// hold what the release rendered is patched back.
//
// The stock repair computes a strategic three-way merge patch, which cannot
// undo a change to the key of a keyed list (say, a Service port edited from
// 80 to 9999): it would add the rendered entry beside the edited one. This
// one decides drift by containment, every rendered field must be present
// with its rendered value, and repairs with a JSON merge patch of the
// rendered object, which replaces lists whole while leaving fields the
// release does not render (a Service's cluster IP, a Deployment's replicas
// under an autoscaler) alone. An object that has not drifted is not written.
//
// Objects of the kinds the operator caches are read from the cache: a
// reconcile of an unchanged release sends no request. The cache may lag;
// an object it shows drifted is patched with what is rendered anyway (a
// no-op if it was not), and a change it does not show yet arrives as a
// watch event that starts another reconcile.
func (c *actionClient) Reconcile(rel *release.Release) error {
	guard := newManifestGuard(c.obj.GetNamespace(), c.g.cachedKinds)
	objs, err := c.g.manifests.objects(rel.Manifest, guard, c.g.mapper)
	if err != nil {
		return fmt.Errorf("reading the objects of release %s: %w", rel.Name, err)
	}
	for _, want := range objs {
		if err := c.repair(want); err != nil {
			return err
		}
	}
	return nil
}

func (c *actionClient) repair(want *unstructured.Unstructured) error {
	kind := want.GetKind()
	have, err := c.current(want)
	if apierrors.IsNotFound(err) {
		if err := c.g.writer.Create(c.ctx, want.DeepCopy()); err != nil {
			return fmt.Errorf("recreating %s %s: %w", kind, want.GetName(), err)
		}
		opmetrics.DriftRepaired(kind)
		c.g.log.Info("Recreated a deleted object", "kind", kind, "name", want.GetName(), "namespace", want.GetNamespace())
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, want.GetName(), err)
	}
	if contains(have, want.Object) {
		return nil
	}

	patch, err := json.Marshal(want.Object)
	if err != nil {
		return fmt.Errorf("encoding the repair of %s %s: %w", kind, want.GetName(), err)
	}
	if err := c.g.writer.Patch(c.ctx, want.DeepCopy(), client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("repairing %s %s: %w", kind, want.GetName(), err)
	}
	opmetrics.DriftRepaired(kind)
	c.g.log.Info("Repaired a drifted object", "kind", kind, "name", want.GetName(), "namespace", want.GetNamespace())
	return nil
}

// current reads the live object want describes, as a map: from the cache
// when the operator caches its kind and the cache has it, else from the
// API server (the cache holds only what carries the chart's label, and a
// label edited away is drift too).
func (c *actionClient) current(want *unstructured.Unstructured) (map[string]any, error) {
	gvk := want.GroupVersionKind()
	key := client.ObjectKeyFromObject(want)
	if c.g.cachedKinds[gvk] {
		typed, err := c.g.scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("creating a %s: %w", gvk.Kind, err)
		}
		obj := typed.(client.Object)
		err = c.g.cache.Get(c.ctx, key, obj)
		if err == nil && !cachetrim.IsStub(obj) {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return nil, err
			}
			// Typed objects from the cache have no type meta.
			m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
			return m, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	if err := c.g.live.Get(c.ctx, key, live); err != nil {
		return nil, err
	}
	return live.Object, nil
}

// manifestObjects decodes a release manifest, in a stable order, placing
// namespaced objects that name no namespace in the release's. A manifest
// that lists anything the guard refuses is refused whole.
func manifestObjects(manifest string, guard manifestGuard, mapper meta.RESTMapper) ([]*unstructured.Unstructured, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Strings(keys)

	var out []*unstructured.Unstructured
	for _, k := range keys {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(docs[k]), &obj.Object); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", k, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: %w", gvk, err)
		}
		namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
		if namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(guard.namespace)
		}
		if err := guard.check(gvk.GroupKind(), namespaced, obj.GetNamespace(), obj.GetName()); err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, nil
}

// contains reports whether have holds every field of want with the same
// value. Maps may hold more keys than want (defaults, fields others own);
// lists must have the same length, element by element.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			if !contains(h[k], wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	default:
		return reflect.DeepEqual(normalizeNumber(have), normalizeNumber(want))
	}
}

// normalizeNumber lets an integer and a float of the same value compare equal.
func normalizeNumber(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case int32:
		return float64(n)
	}
	return v
}
