package fairqueue

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ByNamespace takes turns by the request's namespace.
func ByNamespace(r reconcile.Request) string { return r.Namespace }

// NewControllerQueue builds a controller's queue as controller-runtime's
// default does (rate limited, delaying, named for its metrics) on a Fair
// queue that takes turns by namespace. It is a controller.Options.NewQueue.
func NewControllerQueue(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	queue := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[reconcile.Request]{
		Name:  name,
		Queue: New(ByNamespace),
	})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[reconcile.Request]{
		Name:  name,
		Queue: queue,
	})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter, workqueue.TypedRateLimitingQueueConfig[reconcile.Request]{
		Name:          name,
		DelayingQueue: delaying,
	})
}
