package liveapi

import (
	"context"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// readOnlyResource is what the live resources share: namespaced, read
// (get, list) and never written, so the API server offers no other verb,
// and guarded by the access check of the echo.dev resource they reveal.
type readOnlyResource struct {
	resource schema.GroupResource
	access   accessCheck
}

// The interfaces each live resource implements, besides rest.Storage.
type liveStorage interface {
	rest.Storage
	rest.Scoper
	rest.KindProvider
	rest.SingularNameProvider
	rest.ShortNamesProvider
	rest.Getter
	rest.Lister
}

var (
	_ liveStorage = &echoRevisions{}
	_ liveStorage = &storedBackups{}
)

func (readOnlyResource) Destroy()              {}
func (readOnlyResource) NamespaceScoped() bool { return true }

// listQuery reads a list request and, when it is for one namespace,
// checks that the user may read what the resource reveals there.
func (r readOnlyResource) listQuery(ctx context.Context, opts *metainternalversion.ListOptions) (listQuery, error) {
	q, err := newListQuery(ctx, opts)
	if err != nil {
		return q, err
	}
	if q.namespace != "" {
		err = r.access.require(ctx, r.resource, "", q.namespace)
	}
	return q, err
}
