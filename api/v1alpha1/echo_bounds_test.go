package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/helmreconciler"
	"github.com/echo-operator/echo-operator/test/harness/largestecho"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// bound is one bound of the Echo spec: spec(n) is a spec with n of what it
// bounds, admitted up to max and refused past it with a message that says.
type bound struct {
	name string
	max  int
	spec func(n int) map[string]any
	says string
}

// Every bound admits its largest value and refuses one more, saying what
// to fix.
func TestEchoSizeBounds(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	for _, b := range echoBounds() {
		t.Run(b.name, func(t *testing.T) {
			RegisterTestingT(t)
			err := k8sClient.Create(context.Background(), echoObject(ns, "bounded", b.spec(b.max)), client.DryRunAll, client.FieldValidation("Strict"))
			Expect(err).NotTo(HaveOccurred(), "the largest value admitted")
			err = k8sClient.Create(context.Background(), echoObject(ns, "bounded", b.spec(b.max+1)), client.DryRunAll, client.FieldValidation("Strict"))
			Expect(err).To(HaveOccurred(), "one past the bound")
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(b.says))
		})
	}
}

func echoBounds() []bound {
	return append(append(mapBounds(), tolerationBounds()...), affinityBounds()...)
}

func mapBounds() []bound {
	return []bound{
		{"nodeSelector entries", 16, func(n int) map[string]any { return spec("nodeSelector", entries(n)) }, "spec.nodeSelector: Too many: 17: must have at most 16 items"},
		{"nodeSelector key", 317, func(n int) map[string]any { return spec("nodeSelector", map[string]any{key(n): "v"}) }, "nodeSelector keys are label keys: at most 317 characters"},
		{"nodeSelector value", 63, func(n int) map[string]any { return spec("nodeSelector", map[string]any{"zone": chars(n)}) }, "spec.nodeSelector.zone: Too long: may not be more than 63 bytes"},
		{"podAnnotations entries", 64, func(n int) map[string]any { return spec("podAnnotations", entries(n)) }, "spec.podAnnotations: Too many: 65: must have at most 64 items"},
		{"podAnnotations key", 317, func(n int) map[string]any { return spec("podAnnotations", map[string]any{key(n): "v"}) }, "podAnnotations keys are at most 317 characters"},
		{"podAnnotations in all", 8192, func(n int) map[string]any { return spec("podAnnotations", map[string]any{"a": chars(n - 1)}) }, "podAnnotations hold at most 8192 characters"},
		{"service annotations entries", 64, func(n int) map[string]any { return spec("service", map[string]any{"annotations": entries(n)}) }, "spec.service.annotations: Too many: 65: must have at most 64 items"},
		{"service annotations key", 317, func(n int) map[string]any {
			return spec("service", map[string]any{"annotations": map[string]any{key(n): "v"}})
		}, "service.annotations keys are at most 317 characters"},
		{"service annotations in all", 8192, func(n int) map[string]any {
			return spec("service", map[string]any{"annotations": map[string]any{"a": chars(n - 1)}})
		}, "service.annotations hold at most 8192 characters"},
		{"imagePullSecrets name", 253, func(n int) map[string]any { return spec("imagePullSecrets", []any{map[string]any{"name": chars(n)}}) }, "imagePullSecrets[].name is a Secret name: at most 253 characters"},
		{"resource name", 308, func(n int) map[string]any {
			return spec("resources", map[string]any{"limits": map[string]any{chars(n-64) + "/" + chars(63): "1"}})
		}, "resource names are at most 308 characters"},
	}
}

func tolerationBounds() []bound {
	toleration := func(k, v string) map[string]any {
		return map[string]any{"key": k, "operator": "Equal", "value": v, "effect": "NoSchedule"}
	}
	return []bound{
		{"tolerations", 32, func(n int) map[string]any {
			return spec("tolerations", repeat(n, func(i int) any { return map[string]any{"key": fmt.Sprint("k", i), "operator": "Exists"} }))
		}, "spec.tolerations: Too many: 33: must have at most 32 items"},
		{"toleration key", 317, func(n int) map[string]any { return spec("tolerations", []any{toleration(key(n), "v")}) }, "spec.tolerations[0].key: Too long: may not be more than 317 bytes"},
		{"toleration value", 63, func(n int) map[string]any { return spec("tolerations", []any{toleration("k", chars(n))}) }, "spec.tolerations[0].value: Too long: may not be more than 63 bytes"},
		{"tolerations in all", 4096, func(n int) map[string]any {
			return spec("tolerations", repeat(16, func(i int) any { return toleration(key(n/16+boolInt(i < n%16)), "") }))
		}, "tolerations hold at most 4096 characters of keys and values in all"},
	}
}

func affinityBounds() []bound {
	return []bound{
		{"affinity terms", 8, func(n int) map[string]any {
			return affinity("podAffinity", map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": podTerms(min(n, 8))},
				"podAntiAffinity", map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": podTerms(n - min(n, 8))})
		}, "affinity holds at most 8 terms in all"},
		{"node selector terms", 8, func(n int) map[string]any {
			return affinity("nodeAffinity", map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": repeat(n, func(int) any { return nodeTerm(1) })}})
		}, "nodeSelectorTerms: Too many: 9: must have at most 8 items"},
		{"node selector term requirements", 8, func(n int) map[string]any {
			term := map[string]any{"matchExpressions": nodeRequirements(min(n, 5)), "matchFields": repeat(n-min(n, 5), func(int) any {
				return map[string]any{"key": "metadata.name", "operator": "In", "values": []any{"node-1"}}
			})}
			return nodeAffinity(term)
		}, "a node selector term holds at most 8 requirements"},
		{"node selector term characters", 1024, func(n int) map[string]any {
			return nodeAffinity(map[string]any{"matchExpressions": []any{
				map[string]any{"key": key(317), "operator": "In", "values": append(repeat(11, func(int) any { return chars(63) }), chars(n-317-11*63))}}})
		}, "a node selector term's keys and values hold at most 1024 characters in all"},
		{"node selector requirement key", 317, func(n int) map[string]any {
			return nodeAffinity(map[string]any{"matchExpressions": []any{map[string]any{"key": key(n), "operator": "Exists"}}})
		}, "matchExpressions[0].key: Too long: may not be more than 317 bytes"},
		{"node selector requirement values", 32, func(n int) map[string]any {
			return nodeAffinity(map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In",
				"values": repeat(n, func(i int) any { return fmt.Sprint("z", i) })}}})
		}, "values: Too many: 33: must have at most 32 items"},
		{"node selector requirement value", 253, func(n int) map[string]any {
			return nodeAffinity(map[string]any{"matchFields": []any{map[string]any{"key": "metadata.name", "operator": "In", "values": []any{chars(n)}}}})
		}, "values[0]: Too long: may not be more than 253 bytes"},
		{"pod affinity term items", 8, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "zone", "labelSelector": map[string]any{}, "namespaces": repeat(min(n, 5), func(i int) any { return fmt.Sprint("ns", i) }),
				"matchLabelKeys": repeat(n-min(n, 5), func(i int) any { return fmt.Sprint("k", i) })})
		}, "a pod affinity term holds at most 8 items"},
		{"pod affinity term characters", 1024, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": key(317), "labelSelector": map[string]any{}, "matchLabelKeys": []any{key(317), "x" + key(316), key(n - 951)}})
		}, "a pod affinity term's keys and values (topologyKey, namespaces, label keys and both selectors) hold at most 1024 characters in all"},
		{"topologyKey", 317, func(n int) map[string]any { return podAffinity(map[string]any{"topologyKey": key(n)}) }, "topologyKey: Too long: may not be more than 317 bytes"},
		{"namespace", 63, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "zone", "namespaces": []any{chars(n)}})
		}, "namespaces[0]: Too long: may not be more than 63 bytes"},
		{"matchLabelKeys key", 317, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "zone", "labelSelector": map[string]any{}, "mismatchLabelKeys": []any{key(n)}})
		}, "mismatchLabelKeys[0]: Too long: may not be more than 317 bytes"},
		{"matchLabels entries", 8, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "zone", "namespaceSelector": map[string]any{"matchLabels": entries(n)}})
		}, "matchLabels: Too many: 9: must have at most 8 items"},
		{"matchLabels key", 317, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "z", "labelSelector": map[string]any{"matchLabels": map[string]any{key(n): "v"}}})
		}, "matchLabels keys are label keys: at most 317 characters"},
		{"matchLabels value", 63, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "z", "labelSelector": map[string]any{"matchLabels": map[string]any{"app": chars(n)}}})
		}, "matchLabels.app: Too long: may not be more than 63 bytes"},
		{"label selector requirement values", 32, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "z", "labelSelector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "app", "operator": "In", "values": repeat(n, func(i int) any { return fmt.Sprint("a", i) })}}}})
		}, "values: Too many: 33: must have at most 32 items"},
		{"label selector requirement value", 63, func(n int) map[string]any {
			return podAffinity(map[string]any{"topologyKey": "z", "labelSelector": map[string]any{"matchExpressions": []any{
				map[string]any{"key": "app", "operator": "In", "values": []any{chars(n)}}}}})
		}, "values[0]: Too long: may not be more than 63 bytes"},
	}
}

// Operators that no pod takes are refused at admission, not when the
// Deployment is rendered.
func TestEchoSchedulingOperatorsAreChecked(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	for name, tc := range map[string]struct {
		spec map[string]any
		says string
	}{
		"toleration operator": {spec("tolerations", []any{map[string]any{"key": "k", "operator": "Sometimes"}}), "tolerations[].operator must be Exists or Equal"},
		"toleration effect":   {spec("tolerations", []any{map[string]any{"key": "k", "effect": "Never"}}), "tolerations[].effect must be NoSchedule, PreferNoSchedule, NoExecute or empty"},
		"node selector operator": {nodeAffinity(map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "Near"}}}),
			`Unsupported value: "Near"`},
		"label selector operator": {podAffinity(map[string]any{"topologyKey": "z", "labelSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "k", "operator": "Gt", "values": []any{"1"}}}}}), `Unsupported value: "Gt"`},
	} {
		err := k8sClient.Create(context.Background(), echoObject(ns, "operators", tc.spec), client.DryRunAll, client.FieldValidation("Strict"))
		Expect(err).To(HaveOccurred(), name)
		Expect(err.Error()).To(ContainSubstring(tc.says), name)
	}
}

// An Echo that fills every bound of its spec is admitted, takes at most
// largestecho.SpecBytesBound, and renders: the chart's values.schema.json admits
// whatever the CRD does. The API server admits what it renders, its
// Deployment above all: the Echo's bounds are no looser than a pod's.
func TestLargestEchoIsAdmitted(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	u := echoObject(ns, "largest", largestecho.Spec())
	Expect(k8sClient.Create(context.Background(), u, client.FieldValidation("Strict"))).To(Succeed())
	raw, err := json.Marshal(u.Object["spec"])
	Expect(err).NotTo(HaveOccurred())
	t.Logf("the largest spec takes %d bytes of JSON", len(raw))
	Expect(len(raw)).To(BeNumerically("<=", largestecho.SpecBytesBound))

	vals, err := helmreconciler.EchoTranslator{DefaultImage: "registry.example.test/echo:1"}.Translate(context.Background(), u)
	Expect(err).NotTo(HaveOccurred())
	ch, err := chart.Load(filepath.Join(reporoot.Must(t), "helm-charts", "echo"))
	Expect(err).NotTo(HaveOccurred())
	objs, err := chart.Render(ch, u.GetName(), ns, vals)
	Expect(err).NotTo(HaveOccurred(), "the chart refuses a spec the CRD admits")
	for i := range objs {
		Expect(k8sClient.Create(context.Background(), &objs[i], client.DryRunAll)).To(Succeed(),
			"the API server refuses the %s an admitted Echo renders", objs[i].GetKind())
	}
}

func spec(field string, value any) map[string]any { return map[string]any{field: value} }

func affinity(kv ...any) map[string]any {
	a := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return spec("affinity", a)
}

func nodeAffinity(term map[string]any) map[string]any {
	return affinity("nodeAffinity", map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{term}}})
}

func podAffinity(term map[string]any) map[string]any {
	return affinity("podAntiAffinity", map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": []any{term}})
}

func podTerms(n int) []any {
	return repeat(n, func(int) any { return map[string]any{"topologyKey": "kubernetes.io/hostname"} })
}

func nodeTerm(requirements int) map[string]any {
	return map[string]any{"matchExpressions": nodeRequirements(requirements)}
}

func nodeRequirements(n int) []any {
	return repeat(n, func(i int) any { return map[string]any{"key": fmt.Sprint("k", i), "operator": "Exists"} })
}

func repeat(n int, item func(i int) any) []any {
	out := make([]any, 0, n)
	for i := range n {
		out = append(out, item(i))
	}
	return out
}

// entries is a map of n entries with short keys and empty values.
func entries(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("k%03d", i)] = ""
	}
	return m
}

var (
	key     = largestecho.Key
	chars   = largestecho.Chars
	boolInt = largestecho.BoolInt
)
