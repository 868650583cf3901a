package helmreconciler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"

	"helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
)

// Reconcile repairs drift between a deployed release and the cluster: a
// missing object is created again, and an object whose fields no longer
// hold what the release rendered is patched back.
//
// The stock repair computes a strategic three-way merge patch, which cannot
// undo a change to the key of a keyed list (say, a Service port edited from
// 80 to 9999): it would add the rendered entry beside the edited one. This
// one decides drift by containment, every rendered field must be present
// with its rendered value, and repairs with a JSON merge patch of the
// rendered object, which replaces lists whole while leaving fields the
// release does not render (a Service's cluster IP, a Deployment's replicas
// under an autoscaler) alone. An object that has not drifted is not written.
func (c *actionClient) Reconcile(rel *release.Release) error {
	infos, err := c.Config().KubeClient.Build(bytes.NewBufferString(rel.Manifest), false)
	if err != nil {
		return fmt.Errorf("building the objects of release %s: %w", rel.Name, err)
	}
	return infos.Visit(func(expected *resource.Info, err error) error {
		if err != nil {
			return err
		}
		return c.repair(expected)
	})
}

func (c *actionClient) repair(expected *resource.Info) error {
	helper := resource.NewHelper(expected.Client, expected.Mapping)
	kind := expected.Mapping.GroupVersionKind.Kind
	existing, err := helper.Get(expected.Namespace, expected.Name)
	if apierrors.IsNotFound(err) {
		if _, err := helper.Create(expected.Namespace, true, expected.Object); err != nil {
			return fmt.Errorf("recreating %s %s: %w", kind, expected.Name, err)
		}
		c.log.Info("Recreated a deleted object", "kind", kind, "name", expected.Name, "namespace", expected.Namespace)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, expected.Name, err)
	}

	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(expected.Object)
	if err != nil {
		return fmt.Errorf("decoding rendered %s %s: %w", kind, expected.Name, err)
	}
	have, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
	if err != nil {
		return fmt.Errorf("decoding live %s %s: %w", kind, expected.Name, err)
	}
	if contains(have, want) {
		return nil
	}

	patch, err := json.Marshal(want)
	if err != nil {
		return fmt.Errorf("encoding the repair of %s %s: %w", kind, expected.Name, err)
	}
	if _, err := helper.Patch(expected.Namespace, expected.Name, types.MergePatchType, patch, &metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("repairing %s %s: %w", kind, expected.Name, err)
	}
	c.log.Info("Repaired a drifted object", "kind", kind, "name", expected.Name, "namespace", expected.Namespace)
	return nil
}

// contains reports whether have holds every field of want with the same
// value. Maps may hold more keys than want (defaults, fields others own);
// lists must have the same length, element by element.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, wv := range w {
			if !contains(h[k], wv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		if len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return true
	default:
		return reflect.DeepEqual(normalizeNumber(have), normalizeNumber(want))
	}
}

// normalizeNumber lets an integer and a float of the same value compare equal.
func normalizeNumber(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case int32:
		return float64(n)
	}
	return v
}
