package liveapi

import (
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
