package largestecho

import (
	"fmt"
	"strings"
)

// SpecBytesBound bounds the JSON of the largest Echo spec admitted, as
// docs/api.md states it ("Size bounds"): every bound is filled with ASCII
// characters, as the bounds count characters, as Kubernetes' own do.
const SpecBytesBound = 80 * 1024

// Spec fills every bound of the Echo spec, with as many entries as the
// bounds allow, each as long as they allow.
func Spec() map[string]any {
	return map[string]any{
		"replicas": 1, "image": "registry.example.test/" + Chars(490), "imagePullPolicy": "IfNotPresent",
		"imagePullSecrets": repeat(16, func(int) any { return map[string]any{"name": Chars(253)} }),
		"message":          Chars(1024),
		"resources":        map[string]any{"limits": quantities(), "requests": quantities()},
		"service":          map[string]any{"type": "LoadBalancer", "port": 80, "annotations": entries(64, 8192/64)},
		"ingress":          map[string]any{"enabled": true, "className": Chars(253), "host": Chars(253), "tlsSecretName": Chars(253)},
		"persistence":      map[string]any{"enabled": true, "size": "1." + strings.Repeat("0", 62), "storageClassName": Chars(253)},
		"nodeSelector":     NodeSelector(),
		"tolerations": repeat(32, func(int) any {
			return map[string]any{"key": Key(65), "operator": "Equal", "value": Chars(63), "effect": "NoExecute", "tolerationSeconds": int64(-1) << 62}
		}),
		"affinity":       affinity(),
		"podAnnotations": entries(64, 8192/64),
		"backup":         map[string]any{"beforeDelete": map[string]any{"enabled": true, "storage": storage()}},
	}
}

// RunnableSpec is Spec changed only where a cluster would never schedule
// its pods or serve its claim, keeping every string at its length (Spec's
// Deployment is admitted too, as the Echo's bounds are a pod's):
//   - resources: no node has Spec's extended resources; cpu and memory
//     instead.
//   - persistence: the claim names the StorageClass storageClass, and its
//     size is written as the manager writes quantities back ("1Gi", not
//     "1.000…"), so that its first update of the Echo, which adds its
//     finalizer, leaves the spec and generation as they are.
//   - backup.beforeDelete is off: a deletion backs up to no storage.
//
// Its nodeSelector is Spec's: the nodes that run it carry NodeSelector's
// labels.
func RunnableSpec(storageClass string) map[string]any {
	s := Spec()
	s["resources"] = map[string]any{"limits": map[string]any{"cpu": "10m", "memory": "16Mi"}, "requests": map[string]any{"cpu": "10m", "memory": "16Mi"}}
	s["persistence"] = map[string]any{"enabled": true, "size": "1Gi", "storageClassName": storageClass}
	s["backup"].(map[string]any)["beforeDelete"].(map[string]any)["enabled"] = false
	return s
}

// NodeSelector is the largest nodeSelector: 16 label keys of 317
// characters, with values of 63.
func NodeSelector() map[string]any {
	m := map[string]any{}
	for i := range 16 {
		m[fmt.Sprintf("%03d", i)+Key(314)] = Chars(63)
	}
	return m
}

// quantities is 16 extended resources with names of 308 characters (a
// 244-character prefix, '/' and a 63-character name), each of one unit
// written in 64 characters: limits and requests alike, as an extended
// resource takes.
func quantities() map[string]any {
	m := map[string]any{}
	for i := range 16 {
		m[fmt.Sprintf("%03d", i)+Key(305)] = "1." + strings.Repeat("0", 62)
	}
	return m
}

// affinity is 8 preferred pod affinity terms, each with 8 requirements of
// 32 values, as many characters as a term may hold; the topology keys are
// prefixed label keys, whose name part holds at most 63 characters.
func affinity() map[string]any {
	term := func(int) any {
		reqs := repeat(8, func(int) any {
			values := repeat(32, func(i int) any { return Chars(BoolInt(i < 12) * 7) })
			return map[string]any{"key": Chars(20), "operator": "NotIn", "values": values}
		})
		return map[string]any{"weight": 100, "podAffinityTerm": map[string]any{"topologyKey": Key(1024 - 8*(20+12*7)),
			"labelSelector": map[string]any{"matchExpressions": reqs}}}
	}
	return map[string]any{
		"podAffinity":     map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": repeat(4, term)},
		"podAntiAffinity": map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": repeat(4, term)},
	}
}

func storage() map[string]any {
	url := "https://s3.example.test/" + Chars(2048-len("https://s3.example.test/"))
	return map[string]any{"s3": map[string]any{
		"bucket": Chars(63), "endpoint": url, "region": Chars(64), "prefix": Chars(512), "forcePathStyle": true,
		"identity":   map[string]any{"serviceAccountName": Chars(253), "audience": Chars(253), "roleARN": Chars(2048), "stsEndpoint": url},
		"caBundle":   map[string]any{"name": Chars(253), "key": Chars(253)},
		"encryption": map[string]any{"type": "SSE-KMS", "kmsKeyID": Chars(2048)},
	}}
}

func repeat(n int, item func(i int) any) []any {
	out := make([]any, 0, n)
	for i := range n {
		out = append(out, item(i))
	}
	return out
}

// entries is a map of n entries whose keys and values take size
// characters each.
func entries(n, size int) map[string]any {
	m := map[string]any{}
	for i := range n {
		k := fmt.Sprintf("k%03d", i)
		m[k] = Chars(max(size-len(k), 0))
	}
	return m
}

// Key is a label key of n characters: a DNS prefix, '/' and a name.
func Key(n int) string {
	if n <= 63 {
		return Chars(n)
	}
	name := min(63, n-2)
	return Chars(n-name-1) + "/" + Chars(name)
}

// Chars is a string of n characters.
func Chars(n int) string { return strings.Repeat("a", max(n, 0)) }

// BoolInt is 1 for true, 0 for false: for spreading n characters over items.
func BoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
