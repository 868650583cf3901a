package controllers

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestReleaseRecordsCondition(t *testing.T) {
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 4}}
	tests := []struct {
		name        string
		untrusted   []string
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage []string
		notMessage  []string
	}{
		{"every record verifies", nil, metav1.ConditionTrue, echov1alpha1.EchoReasonRecordsVerified, []string{"written by echo-operator"}, nil},
		{"one record does not", []string{"sh.helm.release.v1.web.v9"}, metav1.ConditionFalse, echov1alpha1.EchoReasonUntrustedRecords,
			[]string{"sh.helm.release.v1.web.v9", "ignored", "Delete them"}, []string{"more"}},
		{"many are named up to five", []string{"a", "b", "c", "d", "e", "f", "g"}, metav1.ConditionFalse, echov1alpha1.EchoReasonUntrustedRecords,
			[]string{"a, b, c, d, e and 2 more"}, []string{"f,"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := releaseRecordsCondition(echo, tt.untrusted)
			if c.Type != echov1alpha1.EchoConditionReleaseRecordsVerified || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.ObservedGeneration != 4 {
				t.Fatalf("got %s=%s (%s, generation %d)", c.Type, c.Status, c.Reason, c.ObservedGeneration)
			}
			for _, want := range tt.wantMessage {
				if !strings.Contains(c.Message, want) {
					t.Errorf("message %q lacks %q", c.Message, want)
				}
			}
			for _, not := range tt.notMessage {
				if strings.Contains(c.Message, not) {
					t.Errorf("message %q has %q", c.Message, not)
				}
			}
		})
	}
}

func TestReleaseRecordsConditionKeepsItsTransitionTime(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	echo := &echov1alpha1.Echo{Status: echov1alpha1.EchoStatus{Conditions: []metav1.Condition{{
		Type: echov1alpha1.EchoConditionReleaseRecordsVerified, Status: metav1.ConditionTrue, LastTransitionTime: earlier,
	}}}}
	if got := computeWorkloadStatus(echo, echoWorld{}, now).releaseRecords.LastTransitionTime; !got.Equal(&earlier) {
		t.Errorf("a condition that held moved its transition time to %v", got)
	}
	got := computeWorkloadStatus(echo, echoWorld{untrustedRecords: []string{"x"}}, now).releaseRecords
	if got.Status != metav1.ConditionFalse || !got.LastTransitionTime.Equal(&now) {
		t.Errorf("a flip to %s kept transition time %v", got.Status, got.LastTransitionTime)
	}
}
