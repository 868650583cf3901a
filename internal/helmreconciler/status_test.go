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
			map[string]any{"type": "Paused", "status": "False"},
		},
		"deployedRelease": map[string]any{"name": "e", "manifest": "kind: Deployment\n..."},
		"readyReplicas":   int64(3),
	}}}
	st := releaseStatusOf(u)

	if st.releaseName != "e" {
		t.Errorf("release name = %q", st.releaseName)
	}
	want := map[string]string{
		echov1alpha1.EchoConditionDeployed:       "InstallSuccessful",
		echov1alpha1.EchoConditionInitialized:    "Reconciled",
		echov1alpha1.EchoConditionIrreconcilable: "Unknown",
		echov1alpha1.EchoConditionPaused:         "Reconciled",
	}
	if len(st.conditions) != len(want) {
		t.Fatalf("conditions = %+v, want the %d release types only", st.conditions, len(want))
	}
	for _, c := range st.conditions {
		if c.Type == echov1alpha1.EchoConditionReady {
			t.Error("the Ready condition belongs to the Echo controller")
		}
		if c.Reason != want[c.Type] {
			t.Errorf("%s reason = %q, want %q", c.Type, c.Reason, want[c.Type])
		}
	}
	applied := st.toMap()
	if _, ok := applied["deployedRelease"].(map[string]any)["manifest"]; ok {
		t.Error("the manifest would be written to status")
	}
	if _, ok := applied["readyReplicas"]; ok {
		t.Error("fields of other controllers would be written")
	}
}

func TestReleaseStatusComparisonIgnoresTransitionTimes(t *testing.T) {
	a := releaseStatus{releaseName: "e", conditions: []metav1.Condition{{Type: "Deployed", Status: "True", Reason: "R", LastTransitionTime: metav1.Now()}}}
	b := releaseStatus{releaseName: "e", conditions: []metav1.Condition{{Type: "Deployed", Status: "True", Reason: "R"}}}
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
