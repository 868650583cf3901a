package helmreconciler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestReleaseStatusOf(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{
		"conditions": []any{
			map[string]any{"type": "Ready", "status": "True", "reason": "Available", "message": "ours"},
			map[string]any{"type": "Deployed", "status": "True", "reason": "InstallSuccessful", "message": "installed"},
			map[string]any{"type": "Initialized", "status": "True"},
			map[string]any{"type": "Irreconcilable", "status": "Unknown"},
			map[string]any{"type": "ReleaseFailed", "status": "True", "message": "quota"},
			map[string]any{"type": "Paused", "status": "False"},
		},
		"deployedRelease": map[string]any{"name": "e", "manifest": "kind: Deployment\n..."},
		"readyReplicas":   int64(3),
	}}}
	st := releaseStatusOf(u)

	want := map[string]string{
		echov1alpha1.EchoConditionIrreconcilable: "Unknown",
		echov1alpha1.EchoConditionReleaseFailed:  "Reconciled",
	}
	if len(st.conditions) != len(want) {
		t.Fatalf("conditions = %+v, want the release's conditions that are not False only", st.conditions)
	}
	for _, c := range st.conditions {
		if c.Reason != want[c.Type] {
			t.Errorf("%s reason = %q, want %q", c.Type, c.Reason, want[c.Type])
		}
	}
	applied := st.toMap()
	if len(applied) != 1 {
		t.Errorf("applied %v: only conditions belong to the release reconciler", applied)
	}
}

func TestHealthyReleaseStatusIsEmpty(t *testing.T) {
	healthy := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "ReleaseFailed", "status": "False"},
		map[string]any{"type": "Irreconcilable", "status": "False"},
		map[string]any{"type": "Paused", "status": "False"},
	}}}}
	if !equalReleaseStatus(releaseStatusOf(healthy), releaseStatusOf(&unstructured.Unstructured{Object: map[string]any{}})) {
		t.Error("a healthy release's conditions should compare equal to none: nothing to write")
	}
}

func TestReleaseStatusComparisonIgnoresTransitionTimes(t *testing.T) {
	a := releaseStatus{conditions: []metav1.Condition{{Type: "ReleaseFailed", Status: "True", Reason: "R", LastTransitionTime: metav1.Now()}}}
	b := releaseStatus{conditions: []metav1.Condition{{Type: "ReleaseFailed", Status: "True", Reason: "R"}}}
	if !equalReleaseStatus(a, b) {
		t.Error("statuses that differ only in transition times should compare equal")
	}
	b.conditions[0].Message = "changed"
	if equalReleaseStatus(a, b) {
		t.Error("a changed message should make the statuses differ")
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("abcdef", 5); got != "ab..." {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("abc", 5); got != "abc" {
		t.Errorf("truncate = %q", got)
	}
}
