package fairqueue

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Fair is a workqueue.Queue that keeps one FIFO per key and pops the keys
// in turn: a key joins the end of the turn order when its first item
// arrives, and after each pop goes back to the end while it holds more.
//
// Like every workqueue.Queue, it is used from one goroutine at a time.
type Fair[T comparable] struct {
	key   func(T) string
	items map[string][]T
	// turns holds each key with items once, the next to pop first.
	turns []string
	len   int
}

var _ workqueue.Queue[reconcile.Request] = &Fair[reconcile.Request]{}

// New returns an empty Fair queue that takes turns by key(item).
func New[T comparable](key func(T) string) *Fair[T] {
	return &Fair[T]{key: key, items: map[string][]T{}}
}

// Push adds item at the end of its key's FIFO.
func (q *Fair[T]) Push(item T) {
	k := q.key(item)
	if len(q.items[k]) == 0 {
		q.turns = append(q.turns, k)
	}
	q.items[k] = append(q.items[k], item)
	q.len++
}

// Pop removes the first item of the key whose turn it is. It is called
// only when Len is not zero.
func (q *Fair[T]) Pop() T {
	k := q.turns[0]
	q.turns[0] = ""
	q.turns = q.turns[1:]
	fifo := q.items[k]
	item := fifo[0]
	fifo[0] = *new(T)
	if fifo = fifo[1:]; len(fifo) == 0 {
		delete(q.items, k)
	} else {
		q.items[k] = fifo
		q.turns = append(q.turns, k)
	}
	q.len--
	return item
}

// Len is the number of items of every key.
func (q *Fair[T]) Len() int { return q.len }

// Touch does nothing: an item added again keeps its place.
func (q *Fair[T]) Touch(T) {}
