package helmreconciler

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// ReleaseStatusFieldOwner is the server-side apply field manager of the
// status fields that describe the Helm release.
const ReleaseStatusFieldOwner = "echo-operator-release"

// releaseConditionTypes are the condition types the Helm reconciler writes:
// the ones that say its release cannot move on. Each is written only while
// it is not False: an absent one is False, so a healthy Echo carries none
// of them and a healthy reconcile writes nothing. The release's other
// fields (Deployed, deployedRelease) are the Echo status controller's,
// written with Ready from the deployed revision: one status write per
// install instead of two.
var releaseConditionTypes = []string{
	echov1alpha1.EchoConditionReleaseFailed,
	echov1alpha1.EchoConditionIrreconcilable,
	echov1alpha1.EchoConditionPaused,
}

// maxConditionMessage is the longest message metav1.Condition accepts.
const maxConditionMessage = 32768

// newStatusClient wraps the client of a Helm reconciler for a kind whose
// status is shared with the Go controllers.
//
// The Helm reconciler writes status by replacing all of it with its
// conditions and the release, manifest included. Through this client that
// write becomes a server-side apply of only its conditions that are not
// False (see releaseConditionTypes), so the fields other controllers own
// survive, the manifest never reaches the API server, and nothing is sent
// when those conditions already hold the desired values.
func newStatusClient(c client.Client, gvk schema.GroupVersionKind) client.Client {
	return interceptor.NewClient(noWatch{c}, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, subResource string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok || subResource != "status" || u.GroupVersionKind() != gvk {
				return c.SubResource(subResource).Update(ctx, obj, opts...)
			}
			return applyReleaseStatus(ctx, c, u)
		},
	})
}

// applyReleaseStatus applies the release-owned part of u's status.
func applyReleaseStatus(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	desired := releaseStatusOf(u)

	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), current); err == nil && equalReleaseStatus(releaseStatusOf(current), desired) {
		return nil
	}

	patch := &unstructured.Unstructured{Object: map[string]any{"status": desired.toMap()}}
	patch.SetGroupVersionKind(u.GroupVersionKind())
	patch.SetName(u.GetName())
	patch.SetNamespace(u.GetNamespace())
	if err := c.Status().Patch(ctx, patch, client.Apply, client.FieldOwner(ReleaseStatusFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying release status of %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	// Keep the caller's copy in step, as an update would have.
	u.SetResourceVersion(patch.GetResourceVersion())
	return nil
}

// releaseStatus is the part of an Echo's status owned by the Helm
// reconciler: its conditions that are not False.
type releaseStatus struct {
	conditions []metav1.Condition
}

// releaseStatusOf extracts the release-owned status from an object, in a
// form the CRD schema accepts (metav1.Condition needs a reason).
func releaseStatusOf(u *unstructured.Unstructured) releaseStatus {
	var st struct {
		Conditions []struct {
			Type               string      `json:"type"`
			Status             string      `json:"status"`
			Reason             string      `json:"reason,omitempty"`
			Message            string      `json:"message,omitempty"`
			LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
		} `json:"conditions"`
	}
	if raw, ok := u.Object["status"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}

	out := releaseStatus{}
	for _, t := range releaseConditionTypes {
		for _, c := range st.Conditions {
			if c.Type != t || c.Status == string(metav1.ConditionFalse) {
				continue
			}
			out.conditions = append(out.conditions, metav1.Condition{
				Type:               c.Type,
				Status:             metav1.ConditionStatus(c.Status),
				Reason:             conditionReason(c.Status, c.Reason),
				Message:            truncate(c.Message, maxConditionMessage),
				LastTransitionTime: c.LastTransitionTime,
			})
		}
	}
	return out
}

// conditionReason gives conditions the Helm reconciler leaves without a
// reason one that says what the status means.
func conditionReason(status, reason string) string {
	switch {
	case reason != "":
		return reason
	case status == string(metav1.ConditionUnknown):
		return "Unknown"
	default:
		return "Reconciled"
	}
}

// equalReleaseStatus compares release statuses, ignoring transition times.
func equalReleaseStatus(a, b releaseStatus) bool {
	return reflect.DeepEqual(withoutTimes(a), withoutTimes(b))
}

func withoutTimes(s releaseStatus) releaseStatus {
	out := releaseStatus{}
	for _, c := range s.conditions {
		c.LastTransitionTime = metav1.Time{}
		out.conditions = append(out.conditions, c)
	}
	return out
}

// toMap renders the release status as the status of an apply request. An
// empty list of conditions releases, and so removes, the ones the Helm
// reconciler wrote before.
func (s releaseStatus) toMap() map[string]any {
	conds := make([]any, 0, len(s.conditions))
	for _, c := range s.conditions {
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.Now()
		}
		// A Condition always converts; the error is for types that cannot.
		cond, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(&c)
		conds = append(conds, cond)
	}
	return map[string]any{"conditions": conds}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// noWatch lets a plain client be intercepted; the Helm reconciler never watches through it.
type noWatch struct{ client.Client }

func (noWatch) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	return nil, errors.New("watch is not supported by this client")
}
