package controllers

import (
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

func TestComputeWorkloadStatus(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	earlier := metav1.NewTime(now.Add(-time.Hour))

	echo := func(gen int64, conds ...metav1.Condition) *echov1alpha1.Echo {
		return &echov1alpha1.Echo{
			ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Generation: gen},
			Status:     echov1alpha1.EchoStatus{Conditions: conds, ObservedGeneration: 1},
		}
	}
	deployment := func(specGen string, desired int32, mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Generation: 4,
				Annotations: map[string]string{echov1alpha1.SpecGenerationAnnotation: specGen}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(desired), Selector: &metav1.LabelSelector{
				MatchLabels: chart.SelectorLabels("e")}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: desired, UpdatedReplicas: desired,
				ReadyReplicas: desired, AvailableReplicas: desired},
		}
		for _, m := range mutate {
			m(d)
		}
		return d
	}
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}}}}
	lbService := service.DeepCopy()
	lbService.Spec.Type = corev1.ServiceTypeLoadBalancer
	lbService.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}

	cases := []struct {
		name        string
		echo        *echov1alpha1.Echo
		world       echoWorld
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantObsGen  int64
		wantAddress string
		wantExt     string
	}{
		{name: "no deployment yet", echo: echo(2), world: echoWorld{},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonReleasePending, wantObsGen: 1},
		{name: "deployment of an older generation", echo: echo(2), world: echoWorld{deployment: deployment("1", 1), service: service},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonReleasePending, wantObsGen: 1, wantAddress: "http://e.ns.svc:80"},
		{name: "all replicas available", echo: echo(2), world: echoWorld{deployment: deployment("2", 3), service: service},
			wantStatus: metav1.ConditionTrue, wantReason: echov1alpha1.EchoReasonAvailable, wantObsGen: 2, wantAddress: "http://e.ns.svc:80"},
		{name: "scaled to zero", echo: func() *echov1alpha1.Echo {
			e := echo(2)
			e.Spec.Replicas = ptr.To[int32](0)
			return e
		}(), world: echoWorld{deployment: deployment("2", 0)},
			wantStatus: metav1.ConditionTrue, wantReason: echov1alpha1.EchoReasonScaledToZero, wantObsGen: 2},
		{name: "the Deployment still runs fewer than the Echo asks for", echo: func() *echov1alpha1.Echo {
			e := echo(2)
			e.Spec.Replicas = ptr.To[int32](2)
			return e
		}(), world: echoWorld{deployment: deployment("2", 0)},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonRollingOut, wantObsGen: 2},
		{name: "rolling out", echo: func() *echov1alpha1.Echo {
			e := echo(2)
			e.Spec.Replicas = ptr.To[int32](3)
			return e
		}(), world: echoWorld{deployment: deployment("2", 3, func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 1
		})}, wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonRollingOut, wantObsGen: 2},
		{name: "old pods still terminating", echo: echo(2), world: echoWorld{deployment: deployment("2", 2, func(d *appsv1.Deployment) {
			d.Status.Replicas = 3
		})}, wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonRollingOut, wantObsGen: 2},
		{name: "deployment spec not observed yet", echo: echo(2), world: echoWorld{deployment: deployment("2", 2, func(d *appsv1.Deployment) {
			d.Status.ObservedGeneration = 3
		})}, wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonRollingOut, wantObsGen: 2},
		{name: "progress deadline exceeded", echo: echo(2), world: echoWorld{deployment: deployment("2", 2, func(d *appsv1.Deployment) {
			d.Status.AvailableReplicas = 0
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
		})}, wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonDeploymentFailed, wantObsGen: 2},
		{name: "release failed", echo: echo(2, metav1.Condition{Type: echov1alpha1.EchoConditionReleaseFailed, Status: metav1.ConditionTrue, Message: "boom"}),
			world:      echoWorld{deployment: deployment("2", 1)},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonReleaseFailed, wantObsGen: 2},
		{name: "irreconcilable", echo: echo(2, metav1.Condition{Type: echov1alpha1.EchoConditionIrreconcilable, Status: metav1.ConditionTrue, Message: "values rejected"}),
			world:      echoWorld{deployment: deployment("2", 1)},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonReleaseFailed, wantObsGen: 2},
		{name: "autoscaler minimum not reached yet", echo: func() *echov1alpha1.Echo {
			e := echo(2)
			e.Spec.Autoscaling = &echov1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: 2, MaxReplicas: 4}
			return e
		}(), world: echoWorld{deployment: deployment("2", 1)},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonRollingOut, wantObsGen: 2},
		{name: "paused", echo: echo(2, metav1.Condition{Type: echov1alpha1.EchoConditionPaused, Status: metav1.ConditionTrue}),
			world:      echoWorld{deployment: deployment("2", 1)},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonPaused, wantObsGen: 2},
		{name: "restoring", echo: func() *echov1alpha1.Echo {
			e := echo(2)
			e.Annotations = map[string]string{echov1alpha1.RestoreAnnotation: "r1"}
			return e
		}(), world: echoWorld{deployment: deployment("2", 0)},
			wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonRestoring, wantObsGen: 2},
		{name: "load balancer address", echo: echo(2), world: echoWorld{deployment: deployment("2", 1), service: lbService},
			wantStatus: metav1.ConditionTrue, wantReason: echov1alpha1.EchoReasonAvailable, wantObsGen: 2,
			wantAddress: "http://e.ns.svc:80", wantExt: "http://203.0.113.7:80"},
		{name: "ingress with TLS", echo: echo(2), world: echoWorld{deployment: deployment("2", 1), service: service,
			ingress: &networkingv1.Ingress{Spec: networkingv1.IngressSpec{
				TLS:   []networkingv1.IngressTLS{{Hosts: []string{"echo.example.test"}}},
				Rules: []networkingv1.IngressRule{{Host: "echo.example.test"}}}}},
			wantStatus: metav1.ConditionTrue, wantReason: echov1alpha1.EchoReasonAvailable, wantObsGen: 2,
			wantAddress: "http://e.ns.svc:80", wantExt: "https://echo.example.test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := computeWorkloadStatus(tc.echo, tc.world, now)
			if got.ready.Status != tc.wantStatus || got.ready.Reason != tc.wantReason {
				t.Errorf("Ready = %s/%s (%s), want %s/%s", got.ready.Status, got.ready.Reason, got.ready.Message, tc.wantStatus, tc.wantReason)
			}
			if got.ready.Message == "" {
				t.Error("Ready has no message")
			}
			if got.ready.ObservedGeneration != tc.echo.Generation {
				t.Errorf("Ready.observedGeneration = %d, want %d", got.ready.ObservedGeneration, tc.echo.Generation)
			}
			if got.observedGeneration != tc.wantObsGen {
				t.Errorf("observedGeneration = %d, want %d", got.observedGeneration, tc.wantObsGen)
			}
			if got.address != tc.wantAddress || got.externalAddress != tc.wantExt {
				t.Errorf("addresses = %q, %q, want %q, %q", got.address, got.externalAddress, tc.wantAddress, tc.wantExt)
			}
		})
	}

	t.Run("transition time kept while Ready holds", func(t *testing.T) {
		e := echo(2, metav1.Condition{Type: echov1alpha1.EchoConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: earlier})
		got := computeWorkloadStatus(e, echoWorld{deployment: deployment("2", 1)}, now)
		if !got.ready.LastTransitionTime.Equal(&earlier) {
			t.Errorf("lastTransitionTime = %v, want %v", got.ready.LastTransitionTime, earlier)
		}
		e = echo(2, metav1.Condition{Type: echov1alpha1.EchoConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: earlier})
		got = computeWorkloadStatus(e, echoWorld{deployment: deployment("2", 1)}, now)
		if !got.ready.LastTransitionTime.Equal(&now) {
			t.Errorf("lastTransitionTime = %v, want %v", got.ready.LastTransitionTime, now)
		}
	})

	t.Run("counts and selector come from the deployment", func(t *testing.T) {
		got := computeWorkloadStatus(echo(2), echoWorld{deployment: deployment("2", 3, func(d *appsv1.Deployment) {
			d.Status.ReadyReplicas = 2
			d.Status.AvailableReplicas = 2
		})}, now)
		if got.replicas != 3 || got.readyReplicas != 2 || got.availableReplicas != 2 || got.updatedReplicas != 3 {
			t.Errorf("counts = %d/%d/%d/%d", got.replicas, got.readyReplicas, got.availableReplicas, got.updatedReplicas)
		}
		if got.selector != labels.SelectorFromSet(chart.SelectorLabels("e")).String() {
			t.Errorf("selector = %q", got.selector)
		}
	})
}

func TestSameWorkloadStatusIgnoresOnlyTransitionTime(t *testing.T) {
	a := workloadStatus{replicas: 1, ready: metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	b := a
	b.ready.LastTransitionTime = metav1.NewTime(time.Unix(0, 0))
	if !sameWorkloadStatus(a, b) {
		t.Error("statuses differing only in transition time should be the same")
	}
	b.ready.Message = "other"
	if sameWorkloadStatus(a, b) {
		t.Error("a different message should make statuses differ")
	}
	c := a
	c.readyReplicas = 1
	if sameWorkloadStatus(a, c) {
		t.Error("different counts should make statuses differ")
	}
}

func TestDeployedCondition(t *testing.T) {
	cases := []struct {
		name        string
		rel         *release.Release
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantName    string
	}{
		{name: "none deployed", wantStatus: metav1.ConditionFalse, wantReason: echov1alpha1.EchoReasonReleaseNotFound,
			wantMessage: "The release has no deployed revision"},
		{name: "revision 1, its notes", rel: &release.Release{Name: "e", Version: 1, Info: &release.Info{Notes: "curl http://e"}},
			wantStatus: metav1.ConditionTrue, wantReason: echov1alpha1.EchoReasonInstallSuccessful, wantMessage: "curl http://e", wantName: "e"},
		{name: "a later revision without notes", rel: &release.Release{Name: "e", Version: 4, Info: &release.Info{}},
			wantStatus: metav1.ConditionTrue, wantReason: echov1alpha1.EchoReasonUpgradeSuccessful, wantMessage: "release was successfully upgraded", wantName: "e"},
		{name: "notes past a condition's bound are cut", rel: &release.Release{Name: "e", Version: 1, Info: &release.Info{Notes: strings.Repeat("n", 40000)}},
			wantStatus: metav1.ConditionTrue, wantReason: echov1alpha1.EchoReasonInstallSuccessful, wantMessage: strings.Repeat("n", 32765) + "...", wantName: "e"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, name := deployedCondition(tc.rel)
			if got.Type != echov1alpha1.EchoConditionDeployed || got.Status != tc.wantStatus || got.Reason != tc.wantReason || got.Message != tc.wantMessage || name != tc.wantName {
				t.Errorf("got %s %s %s %.40q, release %q", got.Type, got.Status, got.Reason, got.Message, name)
			}
		})
	}
}

func TestLostReadiness(t *testing.T) {
	ready := func(gen int64) metav1.Condition {
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: echov1alpha1.EchoReasonAvailable, ObservedGeneration: gen}
	}
	notReady := func(reason string, gen int64) metav1.Condition {
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: reason, ObservedGeneration: gen}
	}
	cases := []struct {
		name             string
		current, desired metav1.Condition
		want             bool
	}{
		{"a new generation rolling out", ready(1), notReady(echov1alpha1.EchoReasonRollingOut, 2), false},
		{"a new generation's release on its way", ready(1), notReady(echov1alpha1.EchoReasonReleasePending, 2), false},
		{"pods lost, same generation", ready(2), notReady(echov1alpha1.EchoReasonRollingOut, 2), true},
		{"a new generation's release failed", ready(1), notReady(echov1alpha1.EchoReasonReleaseFailed, 2), true},
		{"never Ready", metav1.Condition{}, notReady(echov1alpha1.EchoReasonRollingOut, 1), false},
		{"still Ready", ready(1), ready(2), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := lostReadiness(tc.current, tc.desired); got != tc.want {
				t.Errorf("lostReadiness = %v, want %v", got, tc.want)
			}
		})
	}
}
