package v1alpha1_test

import (
	"context"
	"encoding/json"
	"maps"
	"math/big"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// A CRD's schema is looser than the Go types the operator decodes it into:
// "7d" is a string, yet no Duration. The API server stores what its schema
// admits, and one such object stops the informer of its whole kind. These
// tests walk every field of every kind, try values that the Go type could
// refuse, and require the server to refuse each one or the Go type to
// decode what the server returned.

// decodeKind is one kind under test, with a valid spec to change one field of.
type decodeKind struct {
	obj      any    // the Go type the operator decodes the kind into
	resource string // its plural resource name
	spec     string // JSON of a valid spec that has one item in each list the walk reaches
	status   string // JSON of the required fields of the status objects the walk reaches, or ""
}

// conditionJSON is a valid condition for the status of every kind.
const conditionJSON = `{"type":"Ready","status":"True","reason":"Test","message":"test",
	"lastTransitionTime":"2024-01-01T00:00:00Z","observedGeneration":1}`

// moverLogJSON is the required part of a backup's or restore's
// status.moverLog.
const moverLogJSON = `{"moverLog": {"job": "decode-backup"}}`

// restoreTestJSON is the required part of a restore test's result.
const restoreTestJSON = `{"completionTime": "2024-01-01T00:00:00Z", "outcome": "Succeeded"}`

const s3StorageJSON = `{"s3":{"bucket":"echo-backups","endpoint":"https://s3.example.test",
	"credentialsSecretRef":{"name":"s3-credentials"}}}`

// moverJSON is valid data mover settings with one item in each list.
const moverJSON = `{
	"resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
	"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "storage", "effect": "NoExecute", "tolerationSeconds": 60}],
	"affinity": {
		"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
			{"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]},
		"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
			{"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]},
		"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
			{"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}
	}}`

var (
	echoDecode = decodeKind{&echov1alpha1.Echo{}, "echoes", `{
		"replicas": 1,
		"resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
		"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "echo", "effect": "NoExecute", "tolerationSeconds": 60}],
		"affinity": {
			"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
				{"weight": 1, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}]},
			"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
				{"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]},
			"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
				{"weight": 1, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname"}}]}
		}}`, `{
		"lastSuccessfulBackup": {"name": "web-1", "completionTime": "2024-01-01T00:00:00Z"},
		"nextScheduledBackup": {"schedule": "daily", "time": "2024-01-01T00:00:00Z"},
		"lastRestoreTest": ` + restoreTestJSON + `}`}
	backupDecode = decodeKind{&echov1alpha1.EchoBackup{}, "echobackups",
		`{"echoName": "missing", "storage": ` + s3StorageJSON + `, "mover": ` + moverJSON + `}`,
		`{"copies": [{"name": "offsite", "phase": "Completed", "moverLog": {"job": "decode-copy"}}], "moverLog": {"job": "decode-backup"}}`}
	scheduleDecode = decodeKind{&echov1alpha1.EchoBackupSchedule{}, "echobackupschedules", `{"schedule": "@daily", "suspend": true,
		"template": {"echoName": "missing", "storage": ` + s3StorageJSON + `, "mover": ` + moverJSON + `,
			"copyTo": [{"name": "offsite", "storage": ` + s3StorageJSON + `}]},
		"restoreTest": {"schedule": "@weekly"},
		"copyRetention": [{"name": "offsite", "keepLast": 30}]}`, `{"lastRestoreTest": ` + restoreTestJSON + `}`}
	restoreDecode = decodeKind{&echov1alpha1.EchoRestore{}, "echorestores", `{"source": {"backupName": "missing"}, "mover": ` + moverJSON + `}`, moverLogJSON}

	decodeKinds = []decodeKind{echoDecode, backupDecode, scheduleDecode, restoreDecode}
)

// schemaLeaf is a field whose Go type can refuse a JSON value of the type
// its schema has.
type schemaLeaf struct {
	path []string // JSON field names; "[]" is the first item of a list, "{}" a key of a map
	typ  reflect.Type
}

func (l schemaLeaf) String() string {
	return strings.NewReplacer(".[]", "[]", ".{}", "{}").Replace(strings.Join(l.path, "."))
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// schemaLeaves walks the fields of a Go type, as JSON sees them.
func schemaLeaves(t reflect.Type) []schemaLeaf {
	var leaves []schemaLeaf
	walkType(t, nil, map[reflect.Type]bool{}, &leaves)
	return leaves
}

func walkType(t reflect.Type, path []string, seen map[reflect.Type]bool, out *[]schemaLeaf) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || isNumber(t) {
		*out = append(*out, schemaLeaf{path: slices.Clone(path), typ: t})
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if seen[t] {
			return // a recursive type: its fields are walked once per path
		}
		seen[t] = true
		for i := range t.NumField() {
			walkField(t.Field(i), path, seen, out)
		}
		delete(seen, t)
	case reflect.Slice:
		walkType(t.Elem(), append(slices.Clone(path), "[]"), seen, out)
	case reflect.Map:
		walkType(t.Elem(), append(slices.Clone(path), "{}"), seen, out)
	}
}

func walkField(f reflect.StructField, path []string, seen map[reflect.Type]bool, out *[]schemaLeaf) {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	switch {
	case !f.IsExported() || name == "-":
		return
	case name == "metadata":
		return // the API server validates object metadata itself, as for every kind
	case name == "" && f.Anonymous:
		walkType(f.Type, path, seen, out) // inlined
	default:
		walkType(f.Type, append(slices.Clone(path), name), seen, out)
	}
}

func isNumber(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// candidates are JSON values to try at a leaf: at least one valid value
// must be admitted, which shows the leaf's path reaches its schema; each
// hostile value must be refused or decode.
type candidates struct {
	valid, hostile []string
}

// candidatesByType holds the values for the types that decode themselves,
// whether or not the kinds use them today.
var candidatesByType = map[reflect.Type]candidates{
	reflect.TypeFor[metav1.Duration](): {
		valid: []string{`"1h"`, `"90m"`},
		hostile: []string{`"7d"`, `"1w"`, `"1x"`, `""`, `"-5m"`, `"0s"`, `"0"`, `"5 m"`, `"P1D"`,
			`"9999999999h"`, `5`, `"1e3h"`},
	},
	reflect.TypeFor[resource.Quantity](): {
		valid: []string{`"1"`, `"64Mi"`, `"500m"`},
		hostile: []string{`"1x"`, `"abc"`, `""`, `"1e1.5"`, `"1e400"`, `"1e9223372036854775808"`,
			`"1E999999999999"`, `"1e-2147483647"`, `1.5`, `9223372036854775808`, `"1e"`},
	},
	// The operator's own quantity: the same values, none of which may hold
	// a decoder.
	reflect.TypeFor[echov1alpha1.BoundedQuantity](): {
		valid: []string{`"1"`, `"64Mi"`, `"500m"`, `2`, `"1e9"`},
		hostile: []string{`"1x"`, `"abc"`, `""`, `"1e1.5"`, `"1e400"`, `"1e9223372036854775808"`,
			`"1E999999999999"`, `"1e-2147483647"`, `1.5`, `9223372036854775808`, `"1e"`, `1E999999999999`},
	},
	reflect.TypeFor[metav1.Time](): {
		valid: []string{`"2024-01-01T00:00:00Z"`, `"2024-01-01T01:00:00.5+01:00"`},
		hostile: []string{`"yesterday"`, `""`, `"2024-01-01"`, `"2024-01-01T00:00:00"`,
			`"2024-01-01t00:00:00z"`, `"2024-01-01T00:00:00x5Z"`, `"2024-01-01 00:00:00Z"`,
			`"2024-02-30T00:00:00Z"`, `"2024-01-01T24:00:00Z"`, `0`, `1700000000`},
	},
	reflect.TypeFor[intstr.IntOrString](): {
		valid:   []string{`1`, `"25%"`},
		hostile: []string{`2147483648`, `-2147483649`, `1.5`, `true`, `""`},
	},
}

// candidatesFor returns the values to try at a leaf of type t.
func candidatesFor(t reflect.Type) (candidates, bool) {
	if c, ok := candidatesByType[t]; ok {
		return c, true
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		// One past each end of the type's range, and numbers JSON writes
		// in other forms.
		above := new(big.Int).Lsh(big.NewInt(1), uint(t.Bits()-1))
		below := new(big.Int).Sub(new(big.Int).Neg(above), big.NewInt(1))
		return candidates{
			valid: []string{`1`, `1024`},
			hostile: []string{above.String(), below.String(),
				`1.5`, `1e3`, `1e15`, `1e300`, `9007199254740993`, `"1"`},
		}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		limit := new(big.Int).Lsh(big.NewInt(1), uint(t.Bits()))
		return candidates{valid: []string{`1`}, hostile: []string{`-1`, limit.String(), `1.5`, `"1"`}}, true
	}
	return candidates{}, false
}

// The walk finds the fields known to be stricter than their schema; a
// broken walk would make the admission test below pass with nothing tried.
func TestSchemaLeavesAreFound(t *testing.T) {
	minimum := map[string]int{"Echo": 20, "EchoBackup": 7, "EchoBackupSchedule": 8, "EchoRestore": 5}
	mustFind := map[string][]string{
		"Echo": {"spec.persistence.size", "spec.resources.limits{}", "spec.tolerations[].tolerationSeconds",
			"spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight",
			"status.replicas", "status.conditions[].lastTransitionTime"},
		"EchoBackupSchedule": {"spec.retention.maxAge", "spec.retention.keepLast", "status.nextScheduleTime"},
		"EchoBackup":         {"status.startTime", "status.size"},
		"EchoRestore":        {"status.completionTime"},
	}
	for _, k := range decodeKinds {
		kind := k.kind()
		var found []string
		for _, l := range schemaLeaves(reflect.TypeOf(k.obj)) {
			found = append(found, l.String())
			if _, ok := candidatesFor(l.typ); !ok {
				t.Errorf("%s %s: no values to try for %s: add some to candidatesByType", kind, l, l.typ)
			}
		}
		if len(found) < minimum[kind] {
			t.Errorf("%s: found %d fields to try, want at least %d: %v", kind, len(found), minimum[kind], found)
		}
		for _, want := range mustFind[kind] {
			if !slices.Contains(found, want) {
				t.Errorf("%s: the walk missed %s: %v", kind, want, found)
			}
		}
	}
}

// Whatever the API server admits, in the spec or the status of any kind,
// decodes into the operator's Go types.
func TestAdmittedObjectsDecode(t *testing.T) {
	ns := newNamespace(t)
	for _, k := range decodeKinds {
		t.Run(k.kind(), func(t *testing.T) {
			k.createForStatus(t, ns)
			for _, leaf := range schemaLeaves(reflect.TypeOf(k.obj)) {
				t.Run(leaf.String(), func(t *testing.T) { k.tryLeaf(t, ns, leaf) })
			}
		})
	}
}

// Values known to break decoding are refused with a message that says
// what to write instead.
func TestUndecodableValuesAreRefused(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		kind  decodeKind
		path  string
		value string
		want  string
	}{
		{scheduleDecode, "spec.retention.maxAge", `"7d"`, "168h"},
		{scheduleDecode, "spec.retention.maxAge", `"-5m"`, "168h"},
		{scheduleDecode, "spec.retention.maxAge", `"0s"`, "168h"},
		{echoDecode, "spec.persistence.size", `"1E999999999999"`, "an exponent has at most 2 digits"},
		{echoDecode, "spec.persistence.size", `"1e1.5"`, "an exponent has at most 2 digits"},
		{echoDecode, "spec.resources.requests.cpu", `"1E999999999999"`, "an exponent has at most 2 digits"},
		{echoDecode, "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution.[].weight", `2147483648`, "between 1 and 100"},
	}
	for _, tc := range cases {
		t.Run(tc.path+"="+tc.value, func(t *testing.T) {
			_, err := tc.kind.dryRunCreate(ns, strings.Split(tc.path, "."), tc.value)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want a refusal containing %q, got %v", tc.want, err)
			}
		})
	}
}

// tryLeaf sends every candidate for one leaf to the API server.
func (k decodeKind) tryLeaf(t *testing.T, ns string, leaf schemaLeaf) {
	c, ok := candidatesFor(leaf.typ)
	if !ok {
		t.Fatalf("no values to try for %s", leaf.typ)
	}
	admitted := 0
	for _, v := range c.valid {
		if k.try(t, ns, leaf, v) {
			admitted++
		}
	}
	if admitted == 0 {
		t.Errorf("%s: none of the valid values %v was admitted: the spec of the test or the walk is wrong", leaf, c.valid)
	}
	for _, v := range c.hostile {
		k.try(t, ns, leaf, v)
	}
}

// try sends one value and reports whether the API server admitted it. An
// admitted object must decode.
func (k decodeKind) try(t *testing.T, ns string, leaf schemaLeaf, value string) bool {
	var body []byte
	var err error
	switch leaf.path[0] {
	case "spec":
		body, err = k.dryRunCreate(ns, leaf.path, value)
	case "status":
		body, err = k.dryRunStatus(ns, leaf.path, value)
	default:
		t.Fatalf("%s: neither in the spec nor in the status", leaf)
	}
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return false
	case err != nil:
		t.Errorf("%s=%s: %v", leaf, value, err)
		return false
	}
	if err := decodeWithin(body, k.obj, 10*time.Second); err != nil {
		t.Errorf("%s=%s was admitted but does not decode into %T: %v", leaf, value, k.obj, err)
	}
	return true
}

// decodeWithin decodes JSON into a new value of obj's type. Some values
// make decoding run for hours, so it gives up after a while.
func decodeWithin(body []byte, obj any, limit time.Duration) error {
	done := make(chan error, 1)
	go func() {
		done <- json.Unmarshal(body, reflect.New(reflect.TypeOf(obj).Elem()).Interface())
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		return context.DeadlineExceeded
	}
}

const statusObjectName = "decode-status"

// createForStatus creates the object whose status the status leaves are
// tried on. No controller runs here, so nothing else writes it.
func (k decodeKind) createForStatus(t *testing.T, ns string) {
	obj := k.object(ns, statusObjectName, nil, "")
	_, err := do(clientset.RESTClient().Post().AbsPath(k.collection(ns)).
		SetHeader("Content-Type", "application/json").Body(obj))
	if err != nil {
		t.Fatalf("creating %s %s: %v", k.resource, statusObjectName, err)
	}
}

// dryRunCreate creates an object with value at path of its spec, without
// storing it, and returns the object the API server would store.
func (k decodeKind) dryRunCreate(ns string, path []string, value string) ([]byte, error) {
	return do(clientset.RESTClient().Post().AbsPath(k.collection(ns)).
		Param("dryRun", "All").Param("fieldValidation", "Strict").
		SetHeader("Content-Type", "application/json").
		Body(k.object(ns, "decode-spec", path, value)))
}

// dryRunStatus patches value at path of the status, through the status
// subresource and its schema, without storing it.
func (k decodeKind) dryRunStatus(ns string, path []string, value string) ([]byte, error) {
	var condition any
	if err := json.Unmarshal([]byte(conditionJSON), &condition); err != nil {
		return nil, err
	}
	status := map[string]any{}
	if k.status != "" {
		if err := json.Unmarshal([]byte(k.status), &status); err != nil {
			return nil, err
		}
	}
	status["conditions"] = []any{condition}
	patch, err := json.Marshal(map[string]any{"status": withValue(status, path[1:], json.RawMessage(value))})
	if err != nil {
		return nil, err
	}
	return do(clientset.RESTClient().Patch(types.MergePatchType).
		AbsPath(k.collection(ns), statusObjectName, "status").
		Param("dryRun", "All").Param("fieldValidation", "Strict").
		Body(patch))
}

// do sends a request for JSON and returns the body the API server sent,
// or its refusal with the server's own message.
func do(req *rest.Request) ([]byte, error) {
	body, err := req.SetHeader("Accept", "application/json").DoRaw(context.Background())
	if err == nil {
		return body, nil
	}
	status := metav1.Status{}
	if json.Unmarshal(body, &status) == nil && status.Kind == "Status" {
		return nil, &apierrors.StatusError{ErrStatus: status}
	}
	return nil, err
}

func (k decodeKind) kind() string { return reflect.TypeOf(k.obj).Elem().Name() }

func (k decodeKind) collection(ns string) string {
	return "/apis/" + echov1alpha1.GroupVersion.String() + "/namespaces/" + ns + "/" + k.resource
}

// object is the JSON of an object of the kind with value at path, if any.
func (k decodeKind) object(ns, name string, path []string, value string) []byte {
	var spec any
	if err := json.Unmarshal([]byte(k.spec), &spec); err != nil {
		panic(err)
	}
	if path != nil {
		spec = withValue(spec, path[1:], json.RawMessage(value))
	}
	raw, err := json.Marshal(map[string]any{
		"apiVersion": echov1alpha1.GroupVersion.String(),
		"kind":       k.kind(),
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       spec,
	})
	if err != nil {
		panic(err)
	}
	return raw
}

// withValue sets value at path under node, creating the maps and
// one-item lists that are missing, and returns the changed node.
func withValue(node any, path []string, value any) any {
	if len(path) == 0 {
		return value
	}
	switch path[0] {
	case "[]":
		list, _ := node.([]any)
		if len(list) == 0 {
			list = []any{nil}
		}
		list[0] = withValue(list[0], path[1:], value)
		return list
	case "{}":
		m := asMap(node)
		key := "cpu" // a key every map of the specs takes, resource names included
		if keys := slices.Sorted(maps.Keys(m)); len(keys) > 0 {
			key = keys[0]
		}
		m[key] = withValue(m[key], path[1:], value)
		return m
	default:
		m := asMap(node)
		m[path[0]] = withValue(m[path[0]], path[1:], value)
		return m
	}
}

func asMap(node any) map[string]any {
	if m, ok := node.(map[string]any); ok {
		return m
	}
	return map[string]any{}
}
