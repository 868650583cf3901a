package v1alpha1

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestQuantityDecoding(t *testing.T) {
	tests := []struct {
		json string
		want string // empty: refused
	}{
		{`"250m"`, "250m"},
		{`"128Mi"`, "128Mi"},
		{`2`, "2"},
		{`"1e9"`, "1e9"},
		{`"+.5"`, "500m"},
		{`"1e99"`, "1e99"},
		// Forms whose parse takes hours are refused before parsing.
		{`"1E999999999999"`, ""},
		{`1E999999999999`, ""},
		{`"1e-2147483647"`, ""},
		{`"1e100"`, ""},
		{`"1x"`, ""},
		{`""`, ""},
		{`"` + string(make([]byte, 100)) + `"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.json, func(t *testing.T) {
			var q BoundedQuantity
			start := time.Now()
			err := json.Unmarshal([]byte(tt.json), &q)
			if elapsed := time.Since(start); elapsed > time.Second {
				t.Fatalf("decoding took %v", elapsed)
			}
			if tt.want == "" {
				if err == nil {
					t.Fatalf("decoded to %s, want a refusal", q.String())
				}
				return
			}
			if err != nil || q.String() != tt.want {
				t.Fatalf("got %q, %v; want %q", q.String(), err, tt.want)
			}
			again, err := json.Marshal(q)
			if err != nil || string(again) != `"`+tt.want+`"` {
				t.Errorf("encoded as %s, %v", again, err)
			}
		})
	}
}

func TestQuantityThroughUnstructured(t *testing.T) {
	spec := EchoSpec{Resources: &ResourceRequirements{Requests: map[corev1.ResourceName]BoundedQuantity{corev1.ResourceCPU: MustBoundedQuantity("100m")}}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		t.Fatal(err)
	}
	var back EchoSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err != nil {
		t.Fatal(err)
	}
	core := back.Resources.Core()
	if got := core.Requests.Cpu().String(); got != "100m" {
		t.Errorf("round trip gave cpu %s", got)
	}
	u["resources"].(map[string]any)["requests"].(map[string]any)["cpu"] = "1E999999999999"
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u, &back); err == nil {
		t.Error("an unbounded exponent converted")
	}
}
