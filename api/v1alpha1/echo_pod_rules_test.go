package v1alpha1_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/helmreconciler"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// The fields the chart copies into the pod template follow a pod's rules:
// an Echo that breaks one is refused at admission with a message that says
// what to fix, not when Helm installs a Deployment the API server refuses.
func TestEchoPodRulesRefuse(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	for name, tc := range podRuleViolations() {
		t.Run(name, func(t *testing.T) {
			RegisterTestingT(t)
			err := k8sClient.Create(context.Background(), echoObject(ns, "refused", tc.spec), client.DryRunAll, client.FieldValidation("Strict"))
			Expect(err).To(HaveOccurred())
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(tc.says))
		})
	}
}

// What a pod takes at the edge of each rule is admitted, and the API
// server admits every object the chart renders from it.
func TestEchoPodRulesAdmitAndRender(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	for i, s := range podRuleEdges() {
		u := echoObject(ns, fmt.Sprintf("edge-%d", i), s)
		Expect(k8sClient.Create(context.Background(), u, client.FieldValidation("Strict"))).To(Succeed(), "%v", s)
		expectRenderedObjectsAdmitted(t, ns, u)
	}
}

// expectRenderedObjectsAdmitted renders the chart for an admitted Echo and
// has the API server admit every object, with a server-side dry run.
func expectRenderedObjectsAdmitted(t *testing.T, ns string, u *unstructured.Unstructured) {
	t.Helper()
	vals, err := helmreconciler.EchoTranslator{DefaultImage: "registry.example.test/echo:1"}.Translate(context.Background(), u)
	Expect(err).NotTo(HaveOccurred())
	ch, err := chart.Load(filepath.Join(reporoot.Must(t), "helm-charts", "echo"))
	Expect(err).NotTo(HaveOccurred())
	objs, err := chart.Render(ch, u.GetName(), ns, vals)
	Expect(err).NotTo(HaveOccurred(), "the chart refuses a spec the CRD admits")
	for i := range objs {
		Expect(k8sClient.Create(context.Background(), &objs[i], client.DryRunAll)).To(Succeed(),
			"the API server refuses the %s that the admitted Echo %s renders", objs[i].GetKind(), u.GetName())
	}
}

type violation struct {
	spec map[string]any
	says string
}

func podRuleViolations() map[string]violation {
	out := map[string]violation{}
	for _, m := range []map[string]violation{resourceViolations(), tolerationViolations(), metadataViolations(),
		nodeAffinityViolations(), podAffinityViolations()} {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func resources(limits, requests map[string]any) map[string]any {
	r := map[string]any{}
	if limits != nil {
		r["limits"] = limits
	}
	if requests != nil {
		r["requests"] = requests
	}
	return spec("resources", r)
}

func resourceViolations() map[string]violation {
	names := "resources.limits names cpu, memory, ephemeral-storage or an extended resource"
	return map[string]violation{
		"hugepages":                  {resources(map[string]any{"hugepages-2Mi": "2Mi", "memory": "64Mi"}, nil), names},
		"unprefixed resource":        {resources(map[string]any{"gpu": "1"}, nil), names},
		"kubernetes.io resource":     {resources(map[string]any{"example.kubernetes.io/gpu": "1"}, nil), names},
		"requests. prefix":           {resources(map[string]any{"requests.example.com/gpu": "1"}, nil), names},
		"resource name syntax":       {resources(map[string]any{"Example.com/gpu": "1"}, nil), names},
		"extended prefix too long":   {resources(map[string]any{chars(245) + "/g": "1"}, nil), names},
		"negative":                   {resources(nil, map[string]any{"cpu": "-1"}), "resources.requests must not be negative"},
		"request above limit":        {resources(map[string]any{"memory": "64Mi"}, map[string]any{"memory": "128Mi"}), "resources.requests must not exceed resources.limits"},
		"extended without limit":     {resources(nil, map[string]any{"example.com/gpu": "1"}), "an extended resource (a name with '/') cannot be overcommitted"},
		"extended request not limit": {resources(map[string]any{"example.com/gpu": "2"}, map[string]any{"example.com/gpu": "1"}), "cannot be overcommitted"},
		"extended fraction":          {resources(map[string]any{"example.com/gpu": "500m"}, nil), "its limits and requests must be integers"},
	}
}

func tolerationViolations() map[string]violation {
	tol := func(t map[string]any) map[string]any { return spec("tolerations", []any{t}) }
	return map[string]violation{
		"toleration operator Lt":       {tol(map[string]any{"key": "k", "operator": "Lt", "value": "5"}), "tolerations[].operator must be Exists or Equal"},
		"toleration key syntax":        {tol(map[string]any{"key": "bad key", "operator": "Exists"}), "key is a taint key"},
		"toleration key prefix":        {tol(map[string]any{"key": chars(254) + "/k", "operator": "Exists"}), "key is a taint key"},
		"toleration value syntax":      {tol(map[string]any{"key": "k", "value": "-v"}), "spec.tolerations[0].value: Invalid value: \"-v\": must be a label value"},
		"toleration empty key":         {tol(map[string]any{"operator": "Equal", "value": "v"}), "operator must be Exists when the key is empty"},
		"toleration Exists with value": {tol(map[string]any{"key": "k", "operator": "Exists", "value": "v"}), "value must be empty when the operator is Exists"},
		"tolerationSeconds NoSchedule": {tol(map[string]any{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}),
			"tolerationSeconds needs the effect NoExecute"},
	}
}

func metadataViolations() map[string]violation {
	return map[string]violation{
		"nodeSelector key syntax":         {spec("nodeSelector", map[string]any{"bad key": "v"}), "nodeSelector keys are label keys: an optional DNS subdomain prefix"},
		"nodeSelector key upper prefix":   {spec("nodeSelector", map[string]any{"Example.com/k": "v"}), "nodeSelector keys are label keys"},
		"nodeSelector value syntax":       {spec("nodeSelector", map[string]any{"zone": "a b"}), "must be a label value"},
		"podAnnotations key syntax":       {spec("podAnnotations", map[string]any{"a/b/c": "v"}), "podAnnotations keys are qualified names"},
		"podAnnotations name too long":    {spec("podAnnotations", map[string]any{chars(64): "v"}), "podAnnotations keys are qualified names"},
		"service annotations key syntax":  {spec("service", map[string]any{"annotations": map[string]any{"-a": "v"}}), "service.annotations keys are qualified names"},
		"service annotations long prefix": {spec("service", map[string]any{"annotations": map[string]any{chars(254) + "/a": "v"}}), "service.annotations keys are qualified names"},
	}
}

func nodeAffinityViolations() map[string]violation {
	req := func(r map[string]any) map[string]any {
		return nodeAffinity(map[string]any{"matchExpressions": []any{r}})
	}
	field := func(r map[string]any) map[string]any { return nodeAffinity(map[string]any{"matchFields": []any{r}}) }
	return map[string]violation{
		"node In without values":      {req(map[string]any{"key": "k", "operator": "In"}), "values must be given when the operator is In or NotIn"},
		"node Exists with values":     {req(map[string]any{"key": "k", "operator": "Exists", "values": []any{"v"}}), "values must be empty when the operator is Exists or DoesNotExist"},
		"node Gt not an integer":      {req(map[string]any{"key": "k", "operator": "Gt", "values": []any{"abc"}}), "the operators Gt and Lt take exactly one value, a non-negative integer"},
		"node Lt two values":          {req(map[string]any{"key": "k", "operator": "Lt", "values": []any{"1", "2"}}), "the operators Gt and Lt take exactly one value"},
		"node key syntax":             {req(map[string]any{"key": "a/b/c", "operator": "Exists"}), "key is a label key"},
		"node value syntax":           {req(map[string]any{"key": "k", "operator": "In", "values": []any{"a b"}}), "values[0] in body should match"},
		"node value too long":         {req(map[string]any{"key": "k", "operator": "In", "values": []any{chars(64)}}), "matchExpressions[].values are label values: at most 63 characters"},
		"matchFields key":             {field(map[string]any{"key": "metadata.uid", "operator": "In", "values": []any{"n"}}), "a matchFields requirement is on metadata.name"},
		"matchFields operator":        {field(map[string]any{"key": "metadata.name", "operator": "Exists"}), "a matchFields requirement is on metadata.name"},
		"matchFields values":          {field(map[string]any{"key": "metadata.name", "operator": "In", "values": []any{"a", "b"}}), "exactly one value"},
		"matchFields node name":       {field(map[string]any{"key": "metadata.name", "operator": "In", "values": []any{"Node_1"}}), "matchFields[].values are node names"},
		"preferred node weight zero":  {affinity("nodeAffinity", map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 0, "preference": map[string]any{}}}}), "weight must be between 1 and 100"},
		"node selector without terms": {affinity("nodeAffinity", map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{}}}), "nodeSelectorTerms: Invalid value: 0: spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms in body should have at least 1 items"},
	}
}

func podAffinityViolations() map[string]violation {
	sel := func(s map[string]any) map[string]any {
		return podAffinity(map[string]any{"topologyKey": "zone", "labelSelector": s})
	}
	return map[string]violation{
		"topologyKey empty":               {podAffinity(map[string]any{"topologyKey": ""}), "topologyKey: Invalid value: \"\": spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey in body should be at least 1 chars long"},
		"topologyKey syntax":              {podAffinity(map[string]any{"topologyKey": chars(64)}), "topologyKey is a node label key"},
		"namespace syntax":                {podAffinity(map[string]any{"topologyKey": "zone", "namespaces": []any{"Team_A"}}), "namespaces are namespace names: DNS labels"},
		"matchLabelKeys without selector": {podAffinity(map[string]any{"topologyKey": "zone", "matchLabelKeys": []any{"app"}}), "matchLabelKeys and mismatchLabelKeys need a labelSelector"},
		"matchLabelKeys and mismatch":     {podAffinity(map[string]any{"topologyKey": "zone", "labelSelector": map[string]any{}, "matchLabelKeys": []any{"app"}, "mismatchLabelKeys": []any{"app"}}), "a key may not be in both matchLabelKeys and mismatchLabelKeys"},
		"matchLabelKeys in matchLabels":   {podAffinity(map[string]any{"topologyKey": "zone", "labelSelector": map[string]any{"matchLabels": map[string]any{"app": "a"}}, "matchLabelKeys": []any{"app"}}), "a key of matchLabelKeys may not also be in labelSelector.matchLabels"},
		"matchLabelKeys in matchExpressions": {podAffinity(map[string]any{"topologyKey": "zone", "labelSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "app", "operator": "Exists"}}}, "matchLabelKeys": []any{"app"}}), "a key of matchLabelKeys may not also be in labelSelector.matchExpressions"},
		"matchLabelKeys syntax":             {podAffinity(map[string]any{"topologyKey": "zone", "labelSelector": map[string]any{}, "matchLabelKeys": []any{"a b"}}), "matchLabelKeys are label keys"},
		"matchLabels key syntax":            {sel(map[string]any{"matchLabels": map[string]any{"a b": "v"}}), "matchLabels keys are label keys: an optional DNS subdomain prefix"},
		"matchLabels value syntax":          {sel(map[string]any{"matchLabels": map[string]any{"app": "a b"}}), "must be a label value"},
		"selector In without values":        {sel(map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "NotIn"}}}), "values must be given when the operator is In or NotIn"},
		"selector DoesNotExist with values": {sel(map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "DoesNotExist", "values": []any{"a"}}}}), "values must be empty when the operator is Exists or DoesNotExist"},
		"selector key syntax":               {sel(map[string]any{"matchExpressions": []any{map[string]any{"key": "-app", "operator": "Exists"}}}), "key is a label key"},
		"selector value syntax":             {sel(map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"a_"}}}}), "values[0] in body should match"},
	}
}

// podRuleEdges are specs at the edge of the rules that a pod takes.
func podRuleEdges() []map[string]any {
	maxKey := chars(253) + "/" + chars(63)
	return []map[string]any{
		resources(map[string]any{"cpu": "200m", "memory": "64Mi", "ephemeral-storage": "1Gi", chars(244) + "/" + chars(63): "2"},
			map[string]any{"cpu": "200m", "memory": "32Mi", chars(244) + "/" + chars(63): "2"}),
		resources(map[string]any{"example.com/gpu": "1", "memory": "64Mi"}, nil),
		spec("tolerations", []any{
			map[string]any{"operator": "Exists"},
			map[string]any{"key": maxKey, "operator": "Equal", "value": "A-1_b.C", "effect": "NoExecute", "tolerationSeconds": 30},
			map[string]any{"key": "k", "value": ""},
		}),
		spec("nodeSelector", map[string]any{maxKey: chars(63), "Zone_A.b-1": ""}),
		spec("podAnnotations", map[string]any{"Example.COM/Key_1": "anything at all", chars(253) + "/" + chars(63): ""}),
		spec("service", map[string]any{"annotations": map[string]any{"Cloud.Example.com/lb": "x"}}),
		affinity("nodeAffinity", map[string]any{
			"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{
				"matchExpressions": []any{
					map[string]any{"key": maxKey, "operator": "Gt", "values": []any{"123456789012345678"}},
					map[string]any{"key": "k", "operator": "NotIn", "values": []any{chars(63), "A.b_c-D"}},
				},
				"matchFields": []any{map[string]any{"key": "metadata.name", "operator": "In", "values": []any{chars(63) + "." + chars(63)}}},
			}}},
			"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 100,
				"preference": map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "DoesNotExist"}}}}},
		}, "podAffinity", map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 1,
			"podAffinityTerm": map[string]any{"topologyKey": maxKey, "namespaces": []any{chars(63), "team-a"},
				"labelSelector": map[string]any{"matchLabels": map[string]any{maxKey: chars(63)},
					"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{"a"}}}},
				"matchLabelKeys": []any{"pod-template-hash"}, "mismatchLabelKeys": []any{"tenant"},
				"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "team", "operator": "Exists"}}}}}}}),
	}
}
