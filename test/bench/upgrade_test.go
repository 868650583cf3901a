//go:build linux

package main

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestCountReleaseChanges(t *testing.T) {
	before := map[string]releaseSecret{
		"sh.helm.release.v1.a.v1": {"1", "deployed", "10", "fp"},
		"sh.helm.release.v1.b.v1": {"1", "deployed", "11", "fp"},
	}
	after := map[string]releaseSecret{
		"sh.helm.release.v1.a.v1": {"1", "superseded", "20", "fp"},
		"sh.helm.release.v1.a.v2": {"2", "deployed", "21", "fp2"},
		"sh.helm.release.v1.b.v1": {"1", "deployed", "11", "fp"},
	}
	if added, rewritten := countReleaseChanges(before, after); added != 1 || rewritten != 1 {
		t.Errorf("%d added, %d rewritten; want 1 and 1", added, rewritten)
	}
}

func TestLatestRevisions(t *testing.T) {
	got := latestRevisions(map[string]releaseSecret{
		"sh.helm.release.v1.a.v1":      {Version: "1"},
		"sh.helm.release.v1.a.v2":      {Version: "2"},
		"sh.helm.release.v1.b.v1.v3":   {Version: "3"},
		"sh.helm.release.v1.echo-1.v1": {Version: "1"},
	})
	want := map[string]int{"a": 2, "b.v1": 3, "echo-1": 1}
	if !maps.Equal(got, want) {
		t.Errorf("latest revisions %v, want %v", got, want)
	}
}

// The counter counts the Deployments that move past the generation they
// had, and the most of them rolling at once.
func TestRolloutCounter(t *testing.T) {
	dep := func(name string, gen, observed int64, updated int32) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
			Status:     appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: 1, UpdatedReplicas: updated, AvailableReplicas: 1},
		}
	}
	c := newRolloutCounter([]any{dep("a", 1, 1, 1), dep("b", 1, 1, 1), dep("c", 1, 1, 1)})
	c.observe(dep("c", 1, 1, 1)) // unchanged: no rollout
	c.observe(dep("a", 2, 1, 1))
	c.observe(dep("b", 2, 2, 0))
	if got := c.rolling(); got != 2 {
		t.Errorf("%d rolling, want 2", got)
	}
	c.observe(dep("a", 2, 2, 1))
	c.observe(dep("b", 2, 2, 1))
	if rolled, peak := c.counts(); rolled != 2 || peak != 2 || c.rolling() != 0 {
		t.Errorf("%d rolled, peak %d, %d rolling; want 2, 2, 0", rolled, peak, c.rolling())
	}
}
