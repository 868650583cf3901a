// Package fairqueue is the work queue of the operator's controllers: it
// hands out the waiting work of every namespace in turn, so that a
// namespace with thousands of objects waiting delays another namespace's
// next object by one turn, not by its whole backlog.
//
// It plugs into client-go's workqueue as the storage under the usual
// deduplication, delay and rate limiting (workqueue.Queue), so everything
// else about the queue (an item is processed by one worker at a time, a
// re-add while processing runs it again, the metrics) is client-go's.
//
// It imports nothing of the operator.
// Imported by controllers and internal/helmreconciler.
package fairqueue
