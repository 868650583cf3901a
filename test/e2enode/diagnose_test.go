package e2enode

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// explainOnFailure prints, when the test fails, what a user would look at
// in namespace: the pods' state and events, and their containers' logs.
func explainOnFailure(t *testing.T, namespace string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pods in %s:\n%s", namespace, describePods(namespace))
		}
	})
}

// describePods tells the phase, conditions, container states and events of
// every pod of namespace, and the last lines of its containers' logs (of
// the previous run too, after a restart).
func describePods(namespace string) string {
	ctx := context.Background()
	pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for i := range pods.Items {
		p := &pods.Items[i]
		fmt.Fprintf(&b, "--- pod %s on %q: %s\n", p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, s := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			fmt.Fprintf(&b, "  container %s ready=%t restarts=%d state=%s\n", s.Name, s.Ready, s.RestartCount, containerState(s.State))
			for _, previous := range []bool{false, true} {
				if previous && s.RestartCount == 0 {
					continue
				}
				tail := int64(40)
				logs, err := clientset.CoreV1().Pods(namespace).GetLogs(p.Name, &corev1.PodLogOptions{
					Container: s.Name, TailLines: &tail, Previous: previous}).DoRaw(ctx)
				fmt.Fprintf(&b, "  logs of %s (previous=%t, err=%v):\n%s\n", s.Name, previous, err, logs)
			}
		}
	}
	events, err := clientset.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	fmt.Fprintf(&b, "--- events in %s (%v):\n", namespace, err)
	if err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "  %s %s/%s %s: %s\n", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

func containerState(s corev1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Waiting != nil:
		return "waiting: " + s.Waiting.Reason + " " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s (exit %d) %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	}
	return "unknown"
}
