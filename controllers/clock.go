package controllers

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clock tells the reconcilers the time; nil is the wall clock. Tests
// inject their own to run schedules without waiting.
type Clock func() time.Time

// Now is the time by the clock.
func (c Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return c()
}

// patchStatusIfChanged writes obj's status, as a merge patch from orig,
// when it differs from orig's: an unchanged object is never written.
func patchStatusIfChanged(ctx context.Context, c client.Client, kind string, orig, obj client.Object, origStatus, status any) error {
	if equalJSON(origStatus, status) {
		return nil
	}
	if err := c.Status().Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("patching the status of %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}
