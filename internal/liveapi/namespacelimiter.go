package liveapi

import (
	"context"
	"fmt"
	"sync"
)

// namespaceLimiter bounds work that the live API does for its requests
// across the process (listings of storage, manifest reads), and the share
// of it one namespace may hold. A namespace that already holds a slot never
// takes the last free one: that one is kept for a namespace holding none,
// so no few namespaces together hold every slot while another waits.
type namespaceLimiter struct {
	total, perNamespace int

	mu          sync.Mutex
	inUse       int
	byNamespace map[string]int
	// freed is closed, and replaced, whenever a slot is released.
	freed chan struct{}
}

func newNamespaceLimiter(total, perNamespace int) *namespaceLimiter {
	return &namespaceLimiter{total: total, perNamespace: perNamespace, byNamespace: map[string]int{}, freed: make(chan struct{})}
}

// acquire takes a slot for namespace, waiting until the process and the
// namespace each have one free or ctx ends. The function it returns
// releases the slot; calling it again does nothing.
func (l *namespaceLimiter) acquire(ctx context.Context, namespace string) (release func(), err error) {
	for {
		l.mu.Lock()
		if l.grantable(namespace) {
			l.inUse++
			l.byNamespace[namespace]++
			l.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { l.release(namespace) }) }, nil
		}
		freed := l.freed
		l.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for one of the %d slots (%d per namespace): %w", l.total, l.perNamespace, context.Cause(ctx))
		}
	}
}

// grantable says whether namespace may take a slot now; l.mu is held.
func (l *namespaceLimiter) grantable(namespace string) bool {
	held, free := l.byNamespace[namespace], l.total-l.inUse
	return held < l.perNamespace && (free > 1 || (free == 1 && held == 0))
}

func (l *namespaceLimiter) release(namespace string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inUse--
	if l.byNamespace[namespace]--; l.byNamespace[namespace] == 0 {
		delete(l.byNamespace, namespace)
	}
	close(l.freed)
	l.freed = make(chan struct{})
}
