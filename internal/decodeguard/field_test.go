package decodeguard

import (
	"reflect"
	"testing"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestFailingFieldNamesTheValue(t *testing.T) {
	cases := []struct {
		name string
		obj  any
		json string
		want string
	}{
		{"a duration of its own decoding", &echov1alpha1.EchoBackupSchedule{},
			`{"kind":"EchoBackupSchedule","spec":{"schedule":"@daily","retention":{"keepLast":3,"maxAge":"7d"}}}`, "spec.retention.maxAge"},
		{"a number for a string", &echov1alpha1.EchoBackupSchedule{},
			`{"spec":{"schedule":5}}`, "spec.schedule"},
		{"a string for a number", &echov1alpha1.EchoBackupSchedule{},
			`{"spec":{"retention":{"keepLast":"three"}}}`, "spec.retention.keepLast"},
		{"an entry of a map", &echov1alpha1.EchoBackupSchedule{},
			`{"metadata":{"name":"s","annotations":{"a":"ok","b":true}}}`, "metadata.annotations.b"},
		{"an item of a list", &echov1alpha1.EchoBackupSchedule{},
			`{"status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Other","lastTransitionTime":"yesterday"}]}}`,
			"status.conditions[1].lastTransitionTime"},
		{"an inlined field", &echov1alpha1.EchoBackupSchedule{}, `{"apiVersion":1}`, "apiVersion"},
		{"an object where a string goes", &echov1alpha1.EchoBackupSchedule{}, `{"spec":{"timeZone":{"name":"UTC"}}}`, "spec.timeZone"},
		{"no object at all", &echov1alpha1.EchoBackupSchedule{}, `[1,2]`, ""},
		{"a key in another case is not the field", &echov1alpha1.EchoBackupSchedule{},
			`{"spec":{"Schedule":5,"retention":{"maxAge":"1x"}}}`, "spec.retention.maxAge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := failingField(reflect.TypeOf(tc.obj), []byte(tc.json)); got != tc.want {
				t.Errorf("failingField = %q, want %q", got, tc.want)
			}
		})
	}
}
