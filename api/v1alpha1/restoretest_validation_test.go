package v1alpha1_test

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A schedule's restore test is validated at admission like its backups.
func TestRestoreTestValidatesAtAdmission(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	schedule := func(restoreTest map[string]any) map[string]any {
		return map[string]any{"schedule": "@daily", "restoreTest": restoreTest,
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}
	}
	cases := []struct {
		name        string
		restoreTest map[string]any
		want        string // empty: accepted
	}{
		{"weekly", map[string]any{"schedule": "@weekly"}, ""},
		{"cron with timeout and suspend", map[string]any{"schedule": "0 3 * * SUN", "timeout": "2h", "suspend": true}, ""},
		{"no schedule", map[string]any{"timeout": "30m"}, "spec.restoreTest.schedule"},
		{"empty schedule", map[string]any{"schedule": ""}, "spec.restoreTest.schedule"},
		{"prose schedule", map[string]any{"schedule": "every sunday"}, "spec.restoreTest.schedule"},
		{"interval under a minute", map[string]any{"schedule": "@every 30s"}, "an @every interval must be a Go duration of at least 1m"},
		{"interval of a minute", map[string]any{"schedule": "@every 1m"}, ""},
		{"timeout under a minute", map[string]any{"schedule": "@weekly", "timeout": "30s"}, "restoreTest.timeout must be a Go duration from 1m to 24h"},
		{"timeout over a day", map[string]any{"schedule": "@weekly", "timeout": "25h"}, "restoreTest.timeout must be a Go duration from 1m to 24h"},
		{"timeout in days", map[string]any{"schedule": "@weekly", "timeout": "1d"}, "restoreTest.timeout must be a Go duration from 1m to 24h"},
		{"timeout of a day", map[string]any{"schedule": "@weekly", "timeout": "24h"}, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			RegisterTestingT(t)
			err := k8sClient.Create(ctx, object("EchoBackupSchedule", ns, "rt-"+strconv.Itoa(i), schedule(tc.restoreTest)), client.DryRunAll)
			if tc.want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}

	t.Run("the timeout defaults to 30m and suspend to false", func(t *testing.T) {
		RegisterTestingT(t)
		obj := object("EchoBackupSchedule", ns, "rt-defaults", schedule(map[string]any{"schedule": "@weekly"}))
		Expect(k8sClient.Create(ctx, obj, client.DryRunAll)).To(Succeed())
		timeout, _, _ := unstructured.NestedString(obj.Object, "spec", "restoreTest", "timeout")
		Expect(timeout).To(Equal("30m"))
		suspend, found, _ := unstructured.NestedBool(obj.Object, "spec", "restoreTest", "suspend")
		Expect(found).To(BeTrue())
		Expect(suspend).To(BeFalse())
	})
}
