package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestOnlyProgress(t *testing.T) {
	ready := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: echov1alpha1.EchoConditionReady, Status: status, Reason: reason}
	}
	records := func(status metav1.ConditionStatus, message string) metav1.Condition {
		return metav1.Condition{Type: echov1alpha1.EchoConditionReleaseRecordsVerified, Status: status, Message: message}
	}
	generation := func(c metav1.Condition, gen int64) metav1.Condition {
		c.ObservedGeneration = gen
		return c
	}
	verified := records(metav1.ConditionTrue, "")
	tests := []struct {
		name             string
		current, desired workloadStatus
		want             bool
	}{
		{"a new Echo's first status, release pending",
			workloadStatus{}, workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonReleasePending)}, true},
		{"release pending to rolling out, counts and records appearing",
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonReleasePending)},
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), replicas: 1, releaseRecords: verified}, true},
		{"counts moving while rolling out",
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), replicas: 1},
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), replicas: 1, updatedReplicas: 1}, true},
		{"becoming Ready",
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut)},
			workloadStatus{ready: ready(metav1.ConditionTrue, echov1alpha1.EchoReasonAvailable)}, false},
		{"a Ready Echo losing pods, same generation",
			workloadStatus{ready: ready(metav1.ConditionTrue, echov1alpha1.EchoReasonAvailable)},
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut)}, false},
		{"a Ready Echo rolling out a new generation",
			workloadStatus{ready: generation(ready(metav1.ConditionTrue, echov1alpha1.EchoReasonAvailable), 1)},
			workloadStatus{ready: generation(ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), 2)}, true},
		{"a Ready Echo's new generation failing",
			workloadStatus{ready: generation(ready(metav1.ConditionTrue, echov1alpha1.EchoReasonAvailable), 1)},
			workloadStatus{ready: generation(ready(metav1.ConditionFalse, echov1alpha1.EchoReasonReleaseFailed), 2)}, false},
		{"counts of a Ready Echo",
			workloadStatus{ready: ready(metav1.ConditionTrue, echov1alpha1.EchoReasonAvailable), replicas: 2},
			workloadStatus{ready: ready(metav1.ConditionTrue, echov1alpha1.EchoReasonAvailable), replicas: 3}, false},
		{"a failure",
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut)},
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonDeploymentFailed)}, false},
		{"recovering from a failure",
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonReleaseFailed)},
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonReleasePending)}, false},
		{"release records becoming untrusted",
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), releaseRecords: verified},
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), releaseRecords: records(metav1.ConditionFalse, "web.v2")}, false},
		{"release records trusted again",
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), releaseRecords: records(metav1.ConditionFalse, "web.v2")},
			workloadStatus{ready: ready(metav1.ConditionFalse, echov1alpha1.EchoReasonRollingOut), releaseRecords: verified}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(onlyProgress(tt.current, tt.desired)).To(Equal(tt.want))
		})
	}
}

func TestStatusPacer(t *testing.T) {
	g := NewWithT(t)
	p := newStatusPacer(10*time.Second, time.Minute)
	web, api := types.NamespacedName{Namespace: "ns", Name: "web"}, types.NamespacedName{Namespace: "ns", Name: "api"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	g.Expect(p.wait(web, start, false)).To(Equal(10*time.Second), "the first progress waits the whole delay")
	g.Expect(p.wait(web, start.Add(4*time.Second), false)).To(Equal(6*time.Second), "later progress waits for the same write")
	g.Expect(p.wait(api, start.Add(4*time.Second), false)).To(Equal(10*time.Second), "each Echo has its own")
	g.Expect(p.wait(web, start.Add(10*time.Second), false)).To(BeZero(), "due")

	p.forget(web)
	g.Expect(p.wait(web, start.Add(11*time.Second), false)).To(Equal(10*time.Second), "after a write, the next progress waits again")

	installing := types.NamespacedName{Namespace: "ns", Name: "new"}
	g.Expect(p.wait(installing, start, true)).To(Equal(time.Minute), "a change on its way is reported when it is Ready, or after a minute")
	g.Expect(p.wait(installing, start.Add(59*time.Second), true)).To(Equal(time.Second))
	g.Expect(p.wait(installing, start.Add(time.Minute), true)).To(BeZero(), "a slow one shows its progress")
}

func TestChangeOnItsWay(t *testing.T) {
	g := NewWithT(t)
	g.Expect(changeOnItsWay(workloadStatus{})).To(BeTrue(), "an install")
	g.Expect(changeOnItsWay(workloadStatus{ready: metav1.Condition{Type: echov1alpha1.EchoConditionReady, Status: metav1.ConditionTrue}})).
		To(BeTrue(), "progress from Ready is a new generation's (onlyProgress)")
	g.Expect(changeOnItsWay(workloadStatus{ready: metav1.Condition{Type: echov1alpha1.EchoConditionReady, Status: metav1.ConditionFalse,
		Reason: echov1alpha1.EchoReasonRollingOut}})).To(BeFalse(), "a rollout already reported")
}

func TestNothingRendered(t *testing.T) {
	tests := map[string]struct {
		world echoWorld
		want  bool
	}{
		"no object of the release yet": {echoWorld{}, true},
		"untrusted records alone":      {echoWorld{untrustedRecords: []string{"sh.helm.release.v1.web.v1"}}, true},
		"the Service first":            {echoWorld{service: &corev1.Service{}}, false},
		"the Deployment":               {echoWorld{deployment: &appsv1.Deployment{}}, false},
		"the Ingress":                  {echoWorld{ingress: &networkingv1.Ingress{}}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := nothingRendered(tc.world); got != tc.want {
				t.Errorf("nothingRendered = %v, want %v", got, tc.want)
			}
		})
	}
}
