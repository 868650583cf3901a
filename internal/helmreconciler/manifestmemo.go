package helmreconciler

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"
)

// manifestMemoSize bounds the decoded manifests kept: enough for the
// releases reconciled in a burst (a rollout's status changes, a restart),
// a few MiB at most.
const manifestMemoSize = 512

// manifestMemo keeps the objects of the manifests drift repair decoded
// last, so that the reconciles of an unchanged release, several per
// install and one per event afterwards, decode its manifest once. The
// objects are shared: callers must not change them. What it holds is a
// cache, rebuilt on demand: a restarted operator decodes again.
type manifestMemo struct {
	entries *lru.Cache
}

type manifestMemoKey struct {
	namespace, manifest string
}

func newManifestMemo() *manifestMemo {
	return &manifestMemo{entries: lru.New(manifestMemoSize)}
}

// objects returns the objects of a manifest, decoded by manifestObjects
// at most once per namespace and manifest. A refused manifest is not kept.
func (m *manifestMemo) objects(manifest string, guard manifestGuard, mapper meta.RESTMapper) ([]*unstructured.Unstructured, error) {
	key := manifestMemoKey{namespace: guard.namespace, manifest: manifest}
	if objs, ok := m.entries.Get(key); ok {
		return objs.([]*unstructured.Unstructured), nil
	}
	objs, err := manifestObjects(manifest, guard, mapper)
	if err != nil {
		return nil, err
	}
	m.entries.Add(key, objs)
	return objs, nil
}
