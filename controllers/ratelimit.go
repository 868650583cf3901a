package controllers

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/echo-operator/echo-operator/internal/fairqueue"
)

// Retries after a failed reconcile back off per object from
// minRetryDelay, doubling up to maxRetryDelay. controller-runtime's
// default goes up to 1000 s: after an outage of the API server or of a
// store, objects that failed a dozen times would sit idle for a quarter of
// an hour once everything is back. 30 s bounds the wait, and the overall
// bucket keeps a storm of failures from flooding the API server.
const (
	minRetryDelay = 5 * time.Millisecond
	maxRetryDelay = 30 * time.Second
	retryQPS      = 10
	retryBurst    = 100
)

// retryRateLimiter is the workqueue rate limiter of every Go controller.
func retryRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](minRetryDelay, maxRetryDelay),
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(retryQPS), retryBurst)},
	)
}

// controllerOptions are the options of every Go controller, with workers
// workers (0 means 1): the retry rate limiter, and a queue that takes the
// namespaces in turn, so that one namespace's backlog does not hold up
// another's objects.
func controllerOptions(workers int) controller.Options {
	return controller.Options{
		MaxConcurrentReconciles: workers,
		RateLimiter:             retryRateLimiter(),
		NewQueue:                fairqueue.NewControllerQueue,
	}
}
