package helmreconciler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/cachetrim"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
)

// cachedReads answers, from the manager's cache, the reads of single
// objects that Helm's actions make against the API server: before an
// install, whether each object of the release already exists; during an
// upgrade, each object's current state, two or three times (to decide
// between create and patch, to compute the patch, and to refresh an
// unchanged one). Those are two reads an Echo per install and five per
// upgrade, of objects the cache already holds.
//
// Only reads of the chart's kinds in the Echo's namespace are answered,
// and only when the cache holds the object: every other request goes to
// the API server. An object the cache lacks is reported missing without
// asking only before the first install (trustMisses), where the release's
// objects are not expected to exist: one that does anyway (created by
// someone else, or without the chart's labels the cache selects on) then
// fails Helm's create with AlreadyExists, as Helm's own check would have
// failed the install. Once a release exists, a miss is asked of the API
// server, which may know an object the cache does not select.
type cachedReads struct {
	next      http.RoundTripper
	cache     client.Reader
	mapper    meta.RESTMapper
	scheme    *runtime.Scheme
	kinds     map[schema.GroupVersionKind]bool
	namespace string
	// trustMisses reports objects the cache lacks as missing.
	trustMisses bool
}

// requestInfos parses request paths as kube-apiserver does.
var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// clientRestConfig is the configuration of the clients of Helm's actions
// for obj: the base one, whose reads of the release's objects are answered
// from the cache (cachedReads).
func (g *actionClientGetter) clientRestConfig(ctx context.Context, obj client.Object, base *rest.Config) (*rest.Config, error) {
	records, err := releaserecords.CachedRecords(ctx, g.cache, obj.GetNamespace(), obj.GetName())
	if err != nil {
		return nil, err
	}
	reads := &cachedReads{
		cache: g.cache, mapper: g.mapper, scheme: g.scheme, kinds: g.cachedKinds, namespace: obj.GetNamespace(),
		trustMisses: len(records) == 0 && !g.expected.pending(releaseKey(obj, obj.GetName())),
	}
	cfg := rest.CopyConfig(base)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		r := *reads
		r.next = rt
		return &r
	})
	return cfg, nil
}

// RoundTrip answers a read of a cached object, or sends the request on.
func (c *cachedReads) RoundTrip(req *http.Request) (*http.Response, error) {
	gvk, resource, key, ok := c.cachedObjectRead(req)
	if !ok {
		return c.next.RoundTrip(req)
	}
	obj, err := c.scheme.New(gvk)
	if err != nil {
		return c.next.RoundTrip(req)
	}
	cobj, ok := obj.(client.Object)
	if !ok {
		return c.next.RoundTrip(req)
	}
	switch err := c.cache.Get(req.Context(), key, cobj); {
	case err == nil && cachetrim.IsStub(cobj):
		// The cache keeps only the identity of an oversized object.
		return c.next.RoundTrip(req)
	case err == nil:
		cobj.GetObjectKind().SetGroupVersionKind(gvk)
		return jsonResponse(req, http.StatusOK, cobj)
	case apierrors.IsNotFound(err) && c.trustMisses:
		status := apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: resource}, key.Name).Status()
		status.Kind, status.APIVersion = "Status", "v1"
		return jsonResponse(req, http.StatusNotFound, &status)
	}
	return c.next.RoundTrip(req)
}

// cachedObjectRead returns the kind, resource and key of the object req
// reads, when it is a GET of one object of a cached kind in the namespace.
func (c *cachedReads) cachedObjectRead(req *http.Request) (gvk schema.GroupVersionKind, resource string, key client.ObjectKey, ok bool) {
	if req.Method != http.MethodGet {
		return gvk, "", key, false
	}
	info, err := requestInfos.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest || info.Verb != "get" || info.Subresource != "" ||
		info.Namespace != c.namespace || info.Name == "" {
		return gvk, "", key, false
	}
	gvk, err = c.mapper.KindFor(schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource})
	if err != nil || !c.kinds[gvk] {
		return gvk, "", key, false
	}
	return gvk, info.Resource, client.ObjectKey{Namespace: info.Namespace, Name: info.Name}, true
}

func jsonResponse(req *http.Request, code int, obj any) (*http.Response, error) {
	body, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding a cached object: %w", err)
	}
	return &http.Response{
		StatusCode:    code,
		Status:        fmt.Sprintf("%d %s", code, http.StatusText(code)),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        http.Header{"Content-Type": []string{"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}
