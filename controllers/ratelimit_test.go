package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestRetryRateLimiterRecoversFast: an object that kept failing through an
// outage is retried within maxRetryDelay once it is over, and one
// object's failures do not slow another down.
func TestRetryRateLimiterRecoversFast(t *testing.T) {
	rl := retryRateLimiter()
	failing := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "failing"}}
	var last int64
	for range 40 {
		d := rl.When(failing)
		if d > maxRetryDelay {
			t.Fatalf("retry delay %s exceeds %s", d, maxRetryDelay)
		}
		last = int64(d)
	}
	if last != int64(maxRetryDelay) {
		t.Errorf("after 40 failures the delay is %d, want the cap %s", last, maxRetryDelay)
	}
	other := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "other"}}
	if d := rl.When(other); d > minRetryDelay {
		t.Errorf("another object's first retry waits %s, want at most %s", d, minRetryDelay)
	}
	rl.Forget(failing)
	if d := rl.When(failing); d > minRetryDelay {
		t.Errorf("a success must reset the backoff: first retry after it waits %s", d)
	}
}
