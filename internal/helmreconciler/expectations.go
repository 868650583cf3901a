package helmreconciler

import (
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// releaseKey identifies a release of one incarnation of its object: a
// deleted and recreated object starts its releases over.
func releaseKey(owner client.Object, name string) string {
	return string(owner.GetUID()) + "/" + name
}

// expectations track the release revisions this process wrote and the
// cache has yet to show, as kube-controller-manager's controllers track the
// objects they create. Right after an upgrade the cache may still hold the
// previous revision, deployed; answering from it would take an outdated
// release for the current one.
//
// A restart loses nothing that matters: a new cache starts from a fresh
// list, which already shows every revision written before.
type expectations struct {
	mu      sync.Mutex
	written map[string]int
}

func newExpectations() *expectations {
	return &expectations{written: map[string]int{}}
}

// expect records that release key has reached version.
func (e *expectations) expect(key string, version int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if version > e.written[key] {
		e.written[key] = version
	}
}

// seen reports whether a cached revision at version is at least the latest
// one written for key, and forgets the expectation once it is.
func (e *expectations) seen(key string, version int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	want, ok := e.written[key]
	if !ok {
		return true
	}
	if version < want {
		return false
	}
	delete(e.written, key)
	return true
}

// pending reports whether a revision written for key has yet to be seen.
func (e *expectations) pending(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.written[key]
	return ok
}

// forget drops the expectation of a release that is gone.
func (e *expectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.written, key)
}
