//go:build linux

package main

import (
	"context"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// messageEnv is the container variable the echo chart puts the message in.
const messageEnv = "ECHO_MESSAGE"

// tracker records, from an informer's events, the first time each object
// satisfies a condition. The condition changes per phase (arm); objects the
// informer already holds are checked when it does.
type tracker struct {
	store cache.Store

	mu      sync.Mutex
	cond    func(obj any) bool
	want    map[string]bool
	reached map[string]time.Time
	all     chan struct{}
}

// newTracker tracks the objects of an informer; call before it starts.
func newTracker(inf cache.SharedIndexInformer) (*tracker, error) {
	t := &tracker{store: inf.GetStore()}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    t.observe,
		UpdateFunc: func(_, obj any) { t.observe(obj) },
	})
	return t, err
}

// arm starts recording when each of names satisfies cond, forgetting what
// an earlier arm recorded.
func (t *tracker) arm(names []string, cond func(obj any) bool) {
	t.mu.Lock()
	t.cond = cond
	t.want = make(map[string]bool, len(names))
	for _, n := range names {
		t.want[n] = true
	}
	t.reached = map[string]time.Time{}
	t.all = make(chan struct{})
	t.mu.Unlock()
	for _, obj := range t.store.List() {
		t.observe(obj)
	}
}

// observe records obj's first time satisfying the condition.
func (t *tracker) observe(obj any) {
	now := time.Now()
	name := objectName(obj)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cond == nil || !t.want[name] {
		return
	}
	if _, done := t.reached[name]; done || !t.cond(obj) {
		return
	}
	t.reached[name] = now
	if len(t.reached) == len(t.want) {
		close(t.all)
	}
}

// wait blocks until every armed object has satisfied the condition or ctx
// ends, and returns the times recorded so far.
func (t *tracker) wait(ctx context.Context) (map[string]time.Time, error) {
	t.mu.Lock()
	all := t.all
	t.mu.Unlock()
	var err error
	select {
	case <-all:
	case <-ctx.Done():
		err = ctx.Err()
	}
	return t.snapshot(), err
}

// snapshot copies the times recorded so far.
func (t *tracker) snapshot() map[string]time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]time.Time, len(t.reached))
	for k, v := range t.reached {
		out[k] = v
	}
	return out
}

func objectName(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetName()
	}
	return ""
}

// deploymentRolledOut is the convergence condition of a Deployment: it
// renders message, the controller has seen its latest generation, every
// desired replica is updated and available, no old replica is left, and it
// reports Available.
func deploymentRolledOut(obj any, message string) bool {
	d, ok := obj.(*appsv1.Deployment)
	if !ok || d.Status.ObservedGeneration < d.Generation || deploymentMessage(d) != chartEscape(message) {
		return false
	}
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	if s.UpdatedReplicas != want || s.AvailableReplicas != want || s.Replicas != want {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deploymentMessage is the value of ECHO_MESSAGE in the pod template.
func deploymentMessage(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			if e.Name == messageEnv {
				return e.Value
			}
		}
	}
	return ""
}

// chartEscape is the message as the chart renders it: "$" doubled, so the
// kubelet does not expand $(VAR) references.
func chartEscape(message string) string { return strings.ReplaceAll(message, "$", "$$") }

// echoReady is the Ready condition of an Echo: status.observedGeneration
// and the Ready condition are at least minGeneration and the object's
// generation, and Ready is True.
func echoReady(obj any, minGeneration int64) bool {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetGeneration() < minGeneration {
		return false
	}
	observed, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if observed < u.GetGeneration() {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "Ready" {
			continue
		}
		gen, _, _ := unstructured.NestedInt64(m, "observedGeneration")
		return m["status"] == string(metav1.ConditionTrue) && (gen == 0 || gen >= u.GetGeneration())
	}
	return false
}
