package clusteruser

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// DescribePods tells the phase, conditions, container states and events of
// every pod of namespace, and the last lines of its containers' logs (of
// the previous run too, after a restart).
func DescribePods(ctx context.Context, clientset kubernetes.Interface, namespace string) string {
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

// WaitReadyPods waits until namespace holds exactly want pods matching
// selector, all on node, running, ready and not being deleted.
func WaitReadyPods(ctx context.Context, clientset kubernetes.Interface, namespace, selector, node string, want int, timeout time.Duration) error {
	var total, ready int
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := clientset.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		total, ready = len(pods.Items), 0
		for i := range pods.Items {
			p := &pods.Items[i]
			if p.Spec.NodeName == node && p.Status.Phase == corev1.PodRunning && podReady(p) && p.DeletionTimestamp == nil {
				ready++
			}
		}
		return total == want && ready == want, nil
	})
	if err != nil {
		return fmt.Errorf("want %d ready pods %s in %s on %s, have %d pods, %d ready: %w", want, selector, namespace, node, total, ready, err)
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
