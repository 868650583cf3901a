package helmreconciler

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NewTypedCache returns a cache constructor whose caches hold objects of
// the given kinds once, typed.
//
// The Helm reconciler reads and watches its kind as unstructured objects,
// which would fill an informer of their own beside the typed one the Go
// controllers use: every Echo cached twice, the unstructured copy several
// times the size. Through this cache, unstructured reads and informers of
// those kinds are served by the typed informers, converting on read. Event
// handlers then receive typed objects, which only ever need metadata.
func NewTypedCache(kinds ...schema.GroupVersionKind) cache.NewCacheFunc {
	set := map[schema.GroupVersionKind]bool{}
	for _, k := range kinds {
		set[k] = true
		set[k.GroupVersion().WithKind(k.Kind+"List")] = true
	}
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		c, err := cache.New(cfg, opts)
		if err != nil {
			return nil, err
		}
		return &typedCache{Cache: c, scheme: opts.Scheme, kinds: set}, nil
	}
}

type typedCache struct {
	cache.Cache
	scheme *runtime.Scheme
	kinds  map[schema.GroupVersionKind]bool
}

// typedFor returns a typed object to read in place of obj, when obj is an
// unstructured object of one of the kinds.
func (c *typedCache) typedFor(obj runtime.Object) (runtime.Object, schema.GroupVersionKind, bool) {
	var gvk schema.GroupVersionKind
	switch u := obj.(type) {
	case *unstructured.Unstructured:
		gvk = u.GroupVersionKind()
	case *unstructured.UnstructuredList:
		gvk = u.GroupVersionKind()
	default:
		return nil, gvk, false
	}
	if !c.kinds[gvk] {
		return nil, gvk, false
	}
	typed, err := c.scheme.New(gvk)
	if err != nil {
		return nil, gvk, false
	}
	return typed, gvk, true
}

// Get implements client.Reader.
func (c *typedCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	typed, gvk, ok := c.typedFor(obj)
	if !ok {
		return c.Cache.Get(ctx, key, obj, opts...)
	}
	if err := c.Cache.Get(ctx, key, typed.(client.Object), opts...); err != nil {
		return err
	}
	return toUnstructured(typed, gvk, obj.(*unstructured.Unstructured))
}

// List implements client.Reader.
func (c *typedCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	typed, gvk, ok := c.typedFor(list)
	if !ok {
		return c.Cache.List(ctx, list, opts...)
	}
	if err := c.Cache.List(ctx, typed.(client.ObjectList), opts...); err != nil {
		return err
	}
	out := list.(*unstructured.UnstructuredList)
	if err := toUnstructured(typed, gvk, out); err != nil {
		return err
	}
	itemGVK := gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List"))
	for i := range out.Items {
		out.Items[i].SetGroupVersionKind(itemGVK)
	}
	return nil
}

// GetInformer implements cache.Informers.
func (c *typedCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if typed, _, ok := c.typedFor(obj); ok {
		return c.Cache.GetInformer(ctx, typed.(client.Object), opts...)
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

// RemoveInformer implements cache.Informers.
func (c *typedCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if typed, _, ok := c.typedFor(obj); ok {
		return c.Cache.RemoveInformer(ctx, typed.(client.Object))
	}
	return c.Cache.RemoveInformer(ctx, obj)
}

// toUnstructured converts a typed object or list into out.
func toUnstructured(typed runtime.Object, gvk schema.GroupVersionKind, out runtime.Unstructured) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return fmt.Errorf("converting a %s: %w", gvk.Kind, err)
	}
	out.SetUnstructuredContent(content)
	out.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}
