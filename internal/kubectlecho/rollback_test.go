package kubectlecho

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chartvalues"
)

func TestRollbackSpec(t *testing.T) {
	const image = "registry.example.test/echo:default"
	render := func(spec echov1alpha1.EchoSpec) chartvalues.Values {
		return chartvalues.FromEcho(&echov1alpha1.Echo{Spec: spec}, image)
	}
	policy := &echov1alpha1.EchoBackupPolicy{}
	cases := []struct {
		name                string
		current, old        echov1alpha1.EchoSpec
		wantChanged         []string
		wantMessage, wantIm string
	}{
		{
			name:        "only the fields that render differently change",
			current:     echov1alpha1.EchoSpec{Message: "second", Replicas: ptr.To[int32](2), Backup: policy},
			old:         echov1alpha1.EchoSpec{Message: "first", Replicas: ptr.To[int32](2)},
			wantChanged: []string{"message"},
			wantMessage: "first",
		},
		{
			name:        "a field the old revision left to its default is set to what rendered",
			current:     echov1alpha1.EchoSpec{Message: "x", Image: "registry.example.test/echo:2"},
			old:         echov1alpha1.EchoSpec{Message: "x"},
			wantChanged: []string{"image"},
			wantMessage: "x", wantIm: image,
		},
		{name: "nothing to do", current: echov1alpha1.EchoSpec{Message: "same"}, old: echov1alpha1.EchoSpec{Message: "same"}, wantMessage: "same"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rollbackSpec(tc.current, render(tc.old), render(tc.current))
			if err != nil {
				t.Fatal(err)
			}
			var changed []string
			for _, c := range specChanges(tc.current, got) {
				field, _, _ := strings.Cut(c, ":")
				changed = append(changed, field)
			}
			if !slices.Equal(changed, tc.wantChanged) {
				t.Errorf("changed %v, want %v", changed, tc.wantChanged)
			}
			if got.Message != tc.wantMessage || got.Image != tc.wantIm {
				t.Errorf("message %q, image %q; want %q, %q", got.Message, got.Image, tc.wantMessage, tc.wantIm)
			}
			if !reflect.DeepEqual(got.Backup, tc.current.Backup) {
				t.Error("the backup policy, which no revision records, changed")
			}
			if rendered := render(got); rendered.Message != render(tc.old).Message || rendered.Image != render(tc.old).Image {
				t.Errorf("the rolled-back spec renders %+v", rendered)
			}
		})
	}
}
