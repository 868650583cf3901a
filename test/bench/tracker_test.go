//go:build linux

package main

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// rolledOut is a Deployment of one replica that has rolled out message.
func rolledOut(name, message string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace, Generation: 2},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "echo",
				Env:  []corev1.EnvVar{{Name: "ECHO_LISTEN", Value: ":8080"}, {Name: messageEnv, Value: chartEscape(message)}},
			}}}},
		},
		Status: appsv1.DeploymentStatus{
			ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}},
		},
	}
}

func TestDeploymentRolledOut(t *testing.T) {
	if !deploymentRolledOut(rolledOut("a", "hi $(HOME)"), "hi $(HOME)") {
		t.Fatal("a rolled-out Deployment with the message is not taken as rolled out")
	}
	for name, mutate := range map[string]func(*appsv1.Deployment){
		"old message":            func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[1].Value = "old" },
		"generation not seen":    func(d *appsv1.Deployment) { d.Generation = 3 },
		"replica not updated":    func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 0 },
		"replica not available":  func(d *appsv1.Deployment) { d.Status.AvailableReplicas = 0 },
		"old replica left":       func(d *appsv1.Deployment) { d.Status.Replicas = 2 },
		"not Available":          func(d *appsv1.Deployment) { d.Status.Conditions[0].Status = corev1.ConditionFalse },
		"no Available condition": func(d *appsv1.Deployment) { d.Status.Conditions = nil },
	} {
		d := rolledOut("a", "hi")
		mutate(d)
		if deploymentRolledOut(d, "hi") {
			t.Errorf("%s: taken as rolled out", name)
		}
	}
	if deploymentRolledOut(&unstructured.Unstructured{}, "hi") {
		t.Error("a non-Deployment is taken as rolled out")
	}
}

// readyEcho is an Echo at generation whose status says observed and Ready.
func readyEcho(generation, observed int64, ready string) *unstructured.Unstructured {
	u := echoObject("e", initialMessage, generation)
	u.Object["status"] = map[string]any{
		"observedGeneration": observed,
		"conditions": []any{
			map[string]any{"type": "Deployed", "status": "True"},
			map[string]any{"type": "Ready", "status": ready, "observedGeneration": observed},
		},
	}
	return u
}

func TestEchoReady(t *testing.T) {
	if !echoReady(readyEcho(1, 1, "True"), 1) {
		t.Error("a Ready Echo is not taken as Ready")
	}
	if echoReady(readyEcho(1, 1, "False"), 1) {
		t.Error("Ready=False is taken as Ready")
	}
	if echoReady(readyEcho(2, 1, "True"), 1) {
		t.Error("a Ready condition of an older generation is taken as Ready")
	}
	if echoReady(readyEcho(1, 1, "True"), 2) {
		t.Error("an Echo not yet patched is taken as Ready for the update")
	}
	if !echoReady(readyEcho(2, 2, "True"), 2) {
		t.Error("a patched Echo Ready again is not taken as Ready for the update")
	}
}

func TestTracker(t *testing.T) {
	store := cache.NewStore(cache.MetaNamespaceKeyFunc)
	tr := &tracker{store: store}
	old := rolledOut("a", initialMessage)
	if err := store.Add(old); err != nil {
		t.Fatal(err)
	}
	// Objects the store already holds count from the arm.
	tr.arm([]string{"a", "b"}, func(o any) bool { return deploymentRolledOut(o, initialMessage) })
	if got := tr.snapshot(); len(got) != 1 {
		t.Fatalf("after arm: %v", got)
	}
	tr.observe(rolledOut("ignored", initialMessage))
	b := rolledOut("b", initialMessage)
	b.Status.AvailableReplicas = 0
	tr.observe(b)
	if got := tr.snapshot(); len(got) != 1 {
		t.Fatalf("an unarmed or unready object was recorded: %v", got)
	}
	tr.observe(rolledOut("b", initialMessage))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got, err := tr.wait(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("wait = %v, %v", got, err)
	}
	first := got["b"]
	tr.observe(rolledOut("b", initialMessage))
	if tr.snapshot()["b"] != first {
		t.Error("a later event moved the first time")
	}

	// A new arm forgets what the last one recorded.
	tr.arm([]string{"a", "b"}, func(o any) bool { return deploymentRolledOut(o, updatedMessage) })
	if got := tr.snapshot(); len(got) != 0 {
		t.Errorf("after re-arm: %v", got)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	if _, err := tr.wait(short); err == nil {
		t.Error("wait returned before every object converged")
	}
}
