package e2enode

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
)

// TestSampleEchoServesFromRealPods applies the README's sample Echo in a
// namespace that enforces the restricted Pod Security Standard: its pods
// run on the real node and turn Ready through their probes, its Service
// answers with the Echo's message through kubectl port-forward, and it
// scales, rolls out a new message and goes away with its children.
func TestSampleEchoServesFromRealPods(t *testing.T) {
	ns := restrictedNamespace(t, "sample")
	kubectl(t, "apply", "-n", ns, "-f", filepath.Join(repoRoot, "config", "samples", "echo_v1alpha1_echo.yaml"))
	kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/echo-sample", "--timeout=180s")
	checkEchoPods(t, ns, "echo-sample", 2)
	if answer := getThroughPortForward(t, ns, "svc/echo-sample", "/hello"); !strings.Contains(answer, `"message":"Hello from echo-sample"`) {
		t.Fatalf("the Service answered %s", answer)
	}
	t.Run("by its cluster DNS name from another pod", func(t *testing.T) {
		url := "http://echo-sample." + ns + ".svc.cluster.local/dns"
		if answer := runClientPod(t, ns, "wget", "-q", "-O", "-", url); !strings.Contains(answer, `"message":"Hello from echo-sample"`) {
			t.Fatalf("%s answered %s", url, answer)
		}
	})
	t.Run("scale", func(t *testing.T) {
		kubectl(t, "scale", "-n", ns, "echo/echo-sample", "--replicas=3")
		checkEchoPods(t, ns, "echo-sample", 3)
		kubectl(t, "scale", "-n", ns, "echo/echo-sample", "--replicas=1")
		checkEchoPods(t, ns, "echo-sample", 1)
	})
	t.Run("rolling update of the message", func(t *testing.T) {
		kubectl(t, "patch", "-n", ns, "echo/echo-sample", "--type=merge", "-p", `{"spec":{"message":"Hello again"}}`)
		var answer string
		err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
			var err error
			if answer, err = getOnce(ns, "svc/echo-sample", "/again"); err != nil {
				answer = err.Error()
			}
			return strings.Contains(answer, `"message":"Hello again"`), nil
		})
		if err != nil {
			t.Fatalf("after the update the Service answered %s", answer)
		}
		kubectl(t, "rollout", "status", "-n", ns, "deployment/echo-sample", "--timeout=180s")
		checkEchoPods(t, ns, "echo-sample", 1)
	})
	t.Run("delete", func(t *testing.T) {
		kubectl(t, "delete", "-n", ns, "echo/echo-sample", "--timeout=180s")
		kubectl(t, "wait", "-n", ns, "--for=delete", "pod", "-l", "app.kubernetes.io/instance=echo-sample", "--timeout=180s")
		if out := kubectl(t, "get", "-n", ns, "deployments,services", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("left after the Echo's deletion: %s", out)
		}
	})
}

// restrictedNamespace creates a namespace that enforces the restricted Pod
// Security Standard, as the docs tell users to, and explains the test's
// failure with its pods.
func restrictedNamespace(t *testing.T, name string) string {
	t.Helper()
	kubectl(t, "create", "namespace", name)
	kubectl(t, "label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted")
	explainOnFailure(t, name)
	return name
}

// checkEchoPods waits until the Echo's Deployment has exactly want pods,
// all Running and Ready on the real node, and no other.
func checkEchoPods(t *testing.T, ns, echo string, want int) {
	t.Helper()
	err := clusteruser.WaitReadyPods(context.Background(), clientset, ns, "app.kubernetes.io/instance="+echo, realnode.NodeName, want, 3*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
}
