package chart

import (
	"testing"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The chart's default replica counts are those of the Echo's replica rules
// (echov1alpha1.EchoSpec.DesiredReplicas), which the operator always sets:
// a change to one is a failure here until the other follows.
func TestDefaultReplicasAreTheEchoRules(t *testing.T) {
	want := (&echov1alpha1.EchoSpec{}).DesiredReplicas()
	defaults := loadChart(t).Values
	autoscaling, _ := defaults["autoscaling"].(map[string]any)
	for name, got := range map[string]any{
		"replicas":                defaults["replicas"],
		"autoscaling.minReplicas": autoscaling["minReplicas"],
		"autoscaling.maxReplicas": autoscaling["maxReplicas"],
	} {
		wantN := map[string]int32{"replicas": want.Replicas, "autoscaling.minReplicas": want.MinReplicas, "autoscaling.maxReplicas": want.MaxReplicas}[name]
		if n, ok := got.(float64); !ok || int32(n) != wantN {
			t.Errorf("values.yaml %s = %v (%T), want %d", name, got, got, wantN)
		}
	}
}
