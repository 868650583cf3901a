package controllers

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ensureFinalizer adds finalizer to obj when present, removes it
// otherwise, and writes nothing when obj already agrees. The merge patch
// carries obj's resource version: it fails rather than overwrite
// finalizers others (the Helm reconciler, another controller) added since
// obj was read, and the next reconcile tries again. Removing the finalizer
// of an object that is already gone is not an error.
func ensureFinalizer(ctx context.Context, c client.Client, obj client.Object, finalizer string, present bool) error {
	if controllerutil.ContainsFinalizer(obj, finalizer) == present {
		return nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	verb := "adding"
	if present {
		controllerutil.AddFinalizer(obj, finalizer)
	} else {
		verb = "removing"
		controllerutil.RemoveFinalizer(obj, finalizer)
	}
	err := c.Patch(ctx, obj, patch)
	if !present {
		err = client.IgnoreNotFound(err)
	}
	if err != nil {
		return fmt.Errorf("%s finalizer %s of %s/%s: %w", verb, finalizer, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
