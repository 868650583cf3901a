package fairqueue

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func TestFairPopsKeysInTurn(t *testing.T) {
	tests := []struct {
		name   string
		pushes []reconcile.Request
		want   []string
	}{
		{
			name:   "one namespace is first in, first out",
			pushes: []reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3")},
			want:   []string{"a/1", "a/2", "a/3"},
		},
		{
			name:   "a namespace's backlog takes turns with the others",
			pushes: []reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3"), req("b", "1"), req("c", "1"), req("b", "2")},
			want:   []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"},
		},
		{
			name:   "the cluster-scoped key is one namespace among the others",
			pushes: []reconcile.Request{req("", "x"), req("", "y"), req("a", "1")},
			want:   []string{"/x", "a/1", "/y"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := New(ByNamespace)
			for _, r := range tc.pushes {
				q.Push(r)
			}
			var got []string
			for q.Len() > 0 {
				got = append(got, q.Pop().String())
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("popped %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFairKeyRejoinsAtTheEndOnceEmptied(t *testing.T) {
	q := New(ByNamespace)
	q.Push(req("a", "1"))
	q.Push(req("b", "1"))
	if got := q.Pop(); got != req("a", "1") {
		t.Fatalf("popped %v first", got)
	}
	q.Push(req("a", "2"))
	q.Push(req("c", "1"))
	var got []string
	for q.Len() > 0 {
		got = append(got, q.Pop().String())
	}
	if want := []string{"b/1", "a/2", "c/1"}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
	if len(q.items) != 0 || len(q.turns) != 0 {
		t.Errorf("an empty queue holds %d keys and %d turns", len(q.items), len(q.turns))
	}
}

// TestControllerQueueServesANewNamespaceNext: with a thousand requests of
// one namespace waiting, another namespace's request is the next but one.
func TestControllerQueueServesANewNamespaceNext(t *testing.T) {
	q := NewControllerQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	for i := range 1000 {
		q.Add(req("flood", fmt.Sprint(i)))
	}
	q.Add(req("flood", "0")) // already waiting: not queued twice
	q.Add(req("neighbour", "web"))
	if q.Len() != 1001 {
		t.Fatalf("the queue holds %d requests, want 1001", q.Len())
	}
	first, _ := q.Get()
	second, _ := q.Get()
	if first != req("flood", "0") || second != req("neighbour", "web") {
		t.Errorf("got %v then %v, want flood/0 then neighbour/web", first, second)
	}
}

// TestControllerQueueKeepsWorkqueueSemantics: a request added while it is
// processed runs again once Done, and not before.
func TestControllerQueueKeepsWorkqueueSemantics(t *testing.T) {
	q := NewControllerQueue("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	q.Add(req("a", "1"))
	got, _ := q.Get()
	q.Add(req("a", "1"))
	if q.Len() != 0 {
		t.Fatalf("a request being processed was queued again before Done")
	}
	q.Done(got)
	if q.Len() != 1 {
		t.Fatalf("a request added while processed was not queued after Done")
	}
}
