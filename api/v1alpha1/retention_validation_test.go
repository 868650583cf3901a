package v1alpha1_test

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestCopyRetentionValidatesAtAdmission: a schedule's retention per copy
// names a copy of its template and bounds it as spec.retention does.
func TestCopyRetentionValidatesAtAdmission(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	template := map[string]any{"echoName": "web", "storage": locationRef("primary"), "deletionPolicy": "Delete",
		"copyTo": []any{map[string]any{"name": "offsite", "storage": locationRef("offsite")}, map[string]any{"name": "archive", "storage": locationRef("archive")}}}
	keep := func(name string, policy map[string]any) map[string]any {
		policy["name"] = name
		return policy
	}
	cases := []struct {
		name     string
		template map[string]any
		entries  []any
		want     string // empty: accepted
	}{
		{"one copy keeps more than the primary", template, []any{keep("offsite", map[string]any{"keepLast": 30})}, ""},
		{"each copy its own", template, []any{keep("offsite", map[string]any{"keepLast": 30}), keep("archive", map[string]any{"maxAge": "8760h", "keepLast": 3})}, ""},
		{"a copy the template does not make", template, []any{keep("elsewhere", map[string]any{"keepLast": 3})},
			"copyRetention[].name must name a copy of template.copyTo"},
		{"a template without copies", map[string]any{"echoName": "web", "storage": locationRef("primary")}, []any{keep("offsite", map[string]any{"keepLast": 3})},
			"copyRetention[].name must name a copy of template.copyTo"},
		{"one copy twice", template, []any{keep("offsite", map[string]any{"keepLast": 3}), keep("offsite", map[string]any{"keepLast": 4})},
			"Duplicate value"},
		{"neither keepLast nor maxAge", template, []any{keep("offsite", map[string]any{})}, "copyRetention[] needs keepLast, maxAge or both"},
		{"keep none", template, []any{keep("offsite", map[string]any{"keepLast": 0})}, "keepLast"},
		{"an age in days", template, []any{keep("offsite", map[string]any{"maxAge": "30d"})}, "maxAge must be a positive Go duration such as 168h"},
		{"no name", template, []any{map[string]any{"keepLast": 3}}, "name"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			RegisterTestingT(t)
			spec := map[string]any{"schedule": "@daily", "retention": map[string]any{"keepLast": 7}, "template": tc.template, "copyRetention": tc.entries}
			err := k8sClient.Create(ctx, object("EchoBackupSchedule", ns, "retention-"+strconv.Itoa(i), spec), client.DryRunAll)
			if tc.want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}
