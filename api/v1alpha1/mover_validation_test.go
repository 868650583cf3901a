package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// moverKinds are the kinds that carry mover settings, each with a spec
// around them and the path of the settings in the spec.
var moverKinds = []struct {
	kind string
	spec func(mover map[string]any) map[string]any
}{
	{"EchoBackup", func(m map[string]any) map[string]any {
		return map[string]any{"echoName": "web", "storage": s3Storage(), "mover": m}
	}},
	{"EchoBackupSchedule", func(m map[string]any) map[string]any {
		return map[string]any{"schedule": "@daily", "template": map[string]any{"echoName": "web", "storage": s3Storage(), "mover": m}}
	}},
	{"EchoRestore", func(m map[string]any) map[string]any {
		return map[string]any{"source": map[string]any{"backupName": "b1"}, "mover": m}
	}},
	{"EchoBackupLocation", func(m map[string]any) map[string]any {
		return map[string]any{"s3": s3Storage()["s3"], "mover": m}
	}},
}

// moverResources are mover settings with these requests and limits.
func moverResources(requests, limits map[string]any) map[string]any {
	r := map[string]any{}
	if requests != nil {
		r["requests"] = requests
	}
	if limits != nil {
		r["limits"] = limits
	}
	return map[string]any{"resources": r}
}

// tolerations are n tolerations: short ones, or long ones of 129
// characters of key and value each (32 of them are 4128 characters).
func tolerations(n int, long bool) []any {
	out := make([]any, n)
	for i := range out {
		if long {
			out[i] = map[string]any{"key": fmt.Sprintf("%s/k%04d", strings.Repeat("a", 60), i), "value": strings.Repeat("v", 63)}
			continue
		}
		out[i] = map[string]any{"key": fmt.Sprintf("k%d", i), "operator": "Exists"}
	}
	return out
}

// terms are n copies of an affinity term.
func terms(n int, term map[string]any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = term
	}
	return out
}

// TestMoverSettingsAdmission: every kind that carries mover settings
// admits what a data mover pod takes, and refuses, with a message that
// says what to fix, what it would not or what is too large.
func TestMoverSettingsAdmission(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	ctx := context.Background()

	cases := []struct {
		name  string
		mover map[string]any
		want  string // empty: admitted
	}{
		{"every field", map[string]any{
			"resources":         map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "128Mi"}, "limits": map[string]any{"cpu": "1", "memory": "512Mi"}},
			"nodeSelector":      map[string]any{"node-role.example.com/storage": "", "topology.kubernetes.io/zone": "eu-west-3a"},
			"tolerations":       []any{map[string]any{"key": "dedicated", "value": "storage", "effect": "NoSchedule"}, map[string]any{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60}},
			"affinity":          map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{"key": "storage", "operator": "In", "values": []any{"fast"}}}}}}}},
			"priorityClassName": "backup-low",
		}, ""},
		{"no settings", map[string]any{}, ""},
		{"requests equal to limits", moverResources(map[string]any{"memory": "1Gi"}, map[string]any{"memory": "1024Mi"}), ""},
		{"limits alone", moverResources(nil, map[string]any{"memory": "1Gi"}), ""},
		{"requests alone, as a number", moverResources(map[string]any{"cpu": 1}, nil), ""},
		{"requests above limits", moverResources(map[string]any{"memory": "2Gi"}, map[string]any{"memory": "1Gi"}),
			"resources.requests must not exceed resources.limits of the same resource"},
		{"cpu request above its limit", moverResources(map[string]any{"cpu": "1500m", "memory": "64Mi"}, map[string]any{"cpu": "1", "memory": "1Gi"}),
			"resources.requests must not exceed resources.limits of the same resource"},
		{"empty resources", map[string]any{"resources": map[string]any{}}, "spec.mover.resources"},
		{"ephemeral storage", moverResources(map[string]any{"ephemeral-storage": "1Gi"}, nil), "resources.requests names cpu and memory only"},
		{"a GPU", moverResources(nil, map[string]any{"example.com/gpu": "1"}), "resources.limits names cpu and memory only"},
		{"a negative request", moverResources(map[string]any{"cpu": "-1"}, nil), "resources.requests must not be negative"},
		{"a zero limit", moverResources(nil, map[string]any{"memory": "0"}), "resources.limits must be more than zero"},
		{"a quantity with a long exponent", moverResources(map[string]any{"memory": "1E999999999999"}, nil), "must be a quantity such as 250m"},
		{"a priority class that is no name", map[string]any{"priorityClassName": "Backup_Low"}, "priorityClassName must be a PriorityClass name"},
		{"a system priority class", map[string]any{"priorityClassName": "system-node-critical"},
			"priorityClassName must not name a system- class"},
		{"a priority class too long", map[string]any{"priorityClassName": strings.Repeat("a", 254)}, "spec.mover.priorityClassName: Too long"},
		{"a priority class of 253 characters", map[string]any{"priorityClassName": strings.Repeat("a", 253)}, ""},
		{"a toleration of every taint with a value", map[string]any{"tolerations": []any{map[string]any{"operator": "Exists", "value": "x"}}},
			"value must be empty when the operator is Exists"},
		{"a toleration without key nor Exists", map[string]any{"tolerations": []any{map[string]any{"value": "x"}}},
			"operator must be Exists when the key is empty"},
		{"a toleration with an alpha operator", map[string]any{"tolerations": []any{map[string]any{"key": "k", "operator": "Gt", "value": "1"}}},
			"tolerations[].operator must be Exists or Equal"},
		{"a toleration with seconds but no NoExecute", map[string]any{"tolerations": []any{map[string]any{"key": "k", "operator": "Exists", "tolerationSeconds": 5}}},
			"tolerationSeconds needs the effect NoExecute"},
		{"a toleration key that is no taint key", map[string]any{"tolerations": []any{map[string]any{"key": "a b", "operator": "Exists"}}},
			"key is a taint key"},
		{"32 tolerations", map[string]any{"tolerations": tolerations(32, false)}, ""},
		{"33 tolerations", map[string]any{"tolerations": tolerations(33, false)}, "spec.mover.tolerations: Too many"},
		{"tolerations of too many characters", map[string]any{"tolerations": tolerations(32, true)}, "tolerations hold at most 4096 characters"},
		{"17 node labels", map[string]any{"nodeSelector": func() map[string]any {
			m := map[string]any{}
			for i := range 17 {
				m[fmt.Sprintf("label-%d", i)] = "x"
			}
			return m
		}()}, "spec.mover.nodeSelector: Too many"},
		{"a node label value that is no label value", map[string]any{"nodeSelector": map[string]any{"zone": "eu west"}}, "must be a label value"},
		{"a node label key that is no label key", map[string]any{"nodeSelector": map[string]any{"-zone": "a"}}, "nodeSelector keys are label keys"},
		{"an affinity of 9 terms", map[string]any{"affinity": map[string]any{
			"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": terms(5, map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "Exists"}}})}},
			"podAntiAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": terms(4, map[string]any{"topologyKey": "kubernetes.io/hostname"})},
		}}, "affinity holds at most 8 terms in all"},
		{"an affinity of weight 0", map[string]any{"affinity": map[string]any{"nodeAffinity": map[string]any{
			"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{"weight": 0,
				"preference": map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "Exists"}}}}}}}},
			"weight must be between 1 and 100"},
		{"a security context", map[string]any{"securityContext": map[string]any{"privileged": true}}, `unknown field "spec.mover.securityContext"`},
		{"host network", map[string]any{"hostNetwork": true}, `unknown field "spec.mover.hostNetwork"`},
	}
	for _, kind := range moverKinds {
		for _, tc := range cases {
			t.Run(kind.kind+"/"+tc.name, func(t *testing.T) {
				RegisterTestingT(t)
				want := tc.want
				if kind.kind == "EchoBackupSchedule" {
					want = strings.ReplaceAll(want, "spec.mover", "spec.template.mover")
				}
				err := k8sClient.Create(ctx, object(kind.kind, ns, "m", kind.spec(tc.mover)), client.DryRunAll, client.FieldValidation("Strict"))
				if want == "" {
					Expect(err).NotTo(HaveOccurred())
					return
				}
				Expect(err).To(MatchError(ContainSubstring(want)))
			})
		}
	}
}
