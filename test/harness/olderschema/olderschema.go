package olderschema

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// LooseMaxAge returns a copy of a CRD's spec.versions in which
// spec.retention.maxAge of every version is a bare string: its own rules
// and every CEL rule above it that names maxAge are gone.
func LooseMaxAge(versions []any) []any {
	loose := runtime.DeepCopyJSONValue(versions).([]any)
	for _, v := range loose {
		dropMaxAgeRules(v.(map[string]any))
	}
	return loose
}

func dropMaxAgeRules(version map[string]any) {
	node, _, _ := unstructured.NestedFieldNoCopy(version, "schema", "openAPIV3Schema")
	for _, name := range []string{"spec", "retention", "maxAge"} {
		parent, ok := node.(map[string]any)
		if !ok {
			return
		}
		dropRulesNaming(parent, "maxAge")
		node, _, _ = unstructured.NestedFieldNoCopy(parent, "properties", name)
	}
	if maxAge, ok := node.(map[string]any); ok {
		for k := range maxAge {
			if k != "type" && k != "description" {
				delete(maxAge, k)
			}
		}
	}
}

func dropRulesNaming(schema map[string]any, word string) {
	rules, ok := schema["x-kubernetes-validations"].([]any)
	if !ok {
		return
	}
	var kept []any
	for _, r := range rules {
		if rule, _ := r.(map[string]any)["rule"].(string); !strings.Contains(rule, word) {
			kept = append(kept, r)
		}
	}
	schema["x-kubernetes-validations"] = kept
	if len(kept) == 0 {
		delete(schema, "x-kubernetes-validations")
	}
}
