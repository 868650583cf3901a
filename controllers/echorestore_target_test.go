package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestCreatedByRestore(t *testing.T) {
	start := time.Date(2026, 11, 1, 12, 0, 0, 500_000_000, time.UTC)
	const from = "s3://echo-backups/team/web/web-1"
	rs := &echov1alpha1.EchoRestore{Status: echov1alpha1.EchoRestoreStatus{
		StartTime: &metav1.Time{Time: start}, RestoredFrom: from,
	}}
	echo := func(annotation string, created time.Time) *echov1alpha1.Echo {
		e := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Time{Time: created}}}
		if annotation != "" {
			e.Annotations = map[string]string{echov1alpha1.RestoredFromAnnotation: annotation}
		}
		return e
	}
	tests := []struct {
		name string
		rs   *echov1alpha1.EchoRestore
		echo *echov1alpha1.Echo
		want bool
	}{
		{"created from this artifact after the start", rs, echo(from, start.Add(3*time.Second)), true},
		{"created in the same second as the start", rs, echo(from, start.Truncate(time.Second)), true},
		{"an Echo a user created", rs, echo("", start.Add(time.Second)), false},
		{"an earlier restore's Echo of the same artifact", rs, echo(from, start.Add(-time.Hour)), false},
		{"an Echo restored from another artifact", rs, echo("s3://echo-backups/team/web/web-2", start.Add(time.Second)), false},
		{"a restore that has not started", &echov1alpha1.EchoRestore{Status: echov1alpha1.EchoRestoreStatus{RestoredFrom: from}},
			echo(from, start), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := createdByRestore(tt.rs, tt.echo); got != tt.want {
				t.Errorf("createdByRestore = %v, want %v", got, tt.want)
			}
		})
	}
}
