package liveapi

import (
	"container/heap"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// listQuery is what a list request asks for.
type listQuery struct {
	// namespace is empty for a list across namespaces.
	namespace string
	labels    labels.Selector
	fields    fields.Selector
	limit     int64
	// after is the key of the last item of the previous page.
	after string
}

func newListQuery(ctx context.Context, opts *metainternalversion.ListOptions) (listQuery, error) {
	q := listQuery{
		namespace: genericapirequest.NamespaceValue(ctx),
		labels:    labels.Everything(),
		fields:    fields.Everything(),
	}
	if opts == nil {
		return q, nil
	}
	if opts.LabelSelector != nil {
		q.labels = opts.LabelSelector
	}
	if opts.FieldSelector != nil {
		q.fields = opts.FieldSelector
	}
	q.limit = opts.Limit
	if opts.Continue != "" {
		after, err := base64.RawURLEncoding.DecodeString(opts.Continue)
		if err != nil {
			return q, apierrors.NewBadRequest(fmt.Sprintf("continue token %q is not one this server gave", opts.Continue))
		}
		q.after = string(after)
	}
	return q, nil
}

// matches reports whether an object passes the label and field selectors.
func (q listQuery) matches(meta *metav1.ObjectMeta, f fields.Set) bool {
	return q.labels.Matches(labels.Set(meta.Labels)) && q.fields.Matches(f)
}

// listKey orders list items: by namespace, then name.
func listKey(meta *metav1.ObjectMeta) string { return meta.Namespace + "/" + meta.Name }

// page sorts items by listKey, skips those up to the continue token and
// cuts the rest at the limit. It returns the page and the token of the
// next one (empty on the last page).
func page[T any](items []T, meta func(*T) *metav1.ObjectMeta, q listQuery) ([]T, string) {
	slices.SortFunc(items, func(a, b T) int { return strings.Compare(listKey(meta(&a)), listKey(meta(&b))) })
	if q.after != "" {
		i, _ := slices.BinarySearchFunc(items, q.after, func(it T, after string) int {
			if listKey(meta(&it)) <= after {
				return -1
			}
			return 1
		})
		items = items[i:]
	}
	if q.limit <= 0 || int64(len(items)) <= q.limit {
		return items, ""
	}
	items = items[:q.limit]
	return items, base64.RawURLEncoding.EncodeToString([]byte(listKey(meta(&items[len(items)-1]))))
}

// pageCollector keeps, of the items added to it, one page: the first max
// in listKey order after the continue token, without holding the others.
type pageCollector[T any] struct {
	meta  func(*T) *metav1.ObjectMeta
	after string
	max   int
	// heap holds the page so far, its last item first.
	heap keyedHeap[T]
	// more is set once an item past the page was added.
	more bool
}

// newPageCollector collects the page q asks for, of at most bound items
// whatever limit it asks for.
func newPageCollector[T any](q listQuery, bound int, meta func(*T) *metav1.ObjectMeta) *pageCollector[T] {
	n := bound
	if q.limit > 0 && q.limit < int64(bound) {
		n = int(q.limit)
	}
	return &pageCollector[T]{meta: meta, after: q.after, max: n}
}

func (c *pageCollector[T]) add(item T) {
	key := listKey(c.meta(&item))
	switch {
	case c.after != "" && key <= c.after:
	case len(c.heap) < c.max:
		heap.Push(&c.heap, keyed[T]{key: key, item: item})
	case key < c.heap[0].key:
		c.more = true
		c.heap[0] = keyed[T]{key: key, item: item}
		heap.Fix(&c.heap, 0)
	default:
		c.more = true
	}
}

// page returns the page's items in order, and the token of the next page
// (empty on the last).
func (c *pageCollector[T]) page() ([]T, string) {
	sorted := slices.SortedFunc(slices.Values(c.heap), func(a, b keyed[T]) int { return strings.Compare(a.key, b.key) })
	items := make([]T, len(sorted))
	for i, k := range sorted {
		items[i] = k.item
	}
	if !c.more || len(items) == 0 {
		return items, ""
	}
	return items, base64.RawURLEncoding.EncodeToString([]byte(sorted[len(sorted)-1].key))
}

// keyed is an item with its listKey.
type keyed[T any] struct {
	key  string
	item T
}

// keyedHeap is a max-heap of items by key (container/heap).
type keyedHeap[T any] []keyed[T]

func (h keyedHeap[T]) Len() int           { return len(h) }
func (h keyedHeap[T]) Less(i, j int) bool { return h[i].key > h[j].key }
func (h keyedHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *keyedHeap[T]) Push(x any)        { *h = append(*h, x.(keyed[T])) }
func (h *keyedHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
