package liveapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestNamespaceLimiter plays sequences of acquisitions and releases. An
// acquisition that would wait is tried with a context already ended, so
// that it fails at once instead.
func TestNamespaceLimiter(t *testing.T) {
	type step struct {
		// take acquires a slot for a namespace; give releases the n-th
		// slot taken.
		take    string
		give    int
		granted bool
	}
	take := func(ns string, granted bool) step { return step{take: ns, granted: granted} }
	give := func(n int) step { return step{give: n} }
	for _, tc := range []struct {
		name         string
		total, share int
		steps        []step
	}{
		{"a namespace takes up to its share", 4, 2, []step{
			take("a", true), take("a", true), take("a", false), take("b", true),
		}},
		{"two namespaces never hold every slot: the last is kept for a third", 4, 2, []step{
			take("a", true), take("a", true), take("b", true), take("b", false), take("c", true), take("d", false),
		}},
		{"the process's slots bound every namespace", 3, 2, []step{
			take("a", true), take("a", true), take("b", true), take("b", false), take("c", false),
		}},
		{"a released slot can be taken again", 2, 2, []step{
			take("a", true), take("a", false), take("b", true), take("c", false), give(0), take("c", true), give(1), take("a", true),
		}},
		{"a namespace's released slot is its own again", 4, 1, []step{
			take("a", true), take("a", false), give(0), take("a", true),
		}},
		{"releasing twice frees one slot", 3, 3, []step{
			take("a", true), take("a", true), give(0), give(0), take("a", true), take("a", false),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newNamespaceLimiter(tc.total, tc.share)
			ended, cancel := context.WithCancel(context.Background())
			cancel()
			var releases []func()
			for i, s := range tc.steps {
				if s.take == "" {
					releases[s.give]()
					continue
				}
				release, err := l.acquire(ended, s.take)
				if granted := err == nil; granted != s.granted {
					t.Fatalf("step %d, a slot for %s: granted %v (%v); want %v", i, s.take, granted, err, s.granted)
				}
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Fatalf("step %d: error %v; want the context's", i, err)
				}
				if release != nil {
					releases = append(releases, release)
				}
			}
		})
	}
}

// TestNamespaceLimiterWaits: an acquisition waits for a slot to be
// released, or for its context to end.
func TestNamespaceLimiterWaits(t *testing.T) {
	l := newNamespaceLimiter(1, 1)
	release, err := l.acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		r, err := l.acquire(context.Background(), "b")
		if err == nil {
			r()
		}
		waited <- err
	}()
	ctx, cancel := context.WithCancel(context.Background())
	canceled := make(chan error, 1)
	go func() {
		_, err := l.acquire(ctx, "c")
		canceled <- err
	}()
	cancel()
	if err := <-canceled; !errors.Is(err, context.Canceled) {
		t.Errorf("an acquisition whose context ended: %v", err)
	}
	release()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("the waiting acquisition failed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a released slot was not given to the acquisition waiting for it")
	}
}
