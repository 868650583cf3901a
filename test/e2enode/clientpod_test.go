package e2enode

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/test/harness/realnode"
)

// clientImage is busybox, which the node's services bring for their helper
// pods, for pods that call Services from inside the cluster.
const clientImage = realnode.HelperImage

// oneShot is a pod that runs a command once.
type oneShot struct {
	image, serviceAccount string
	command               []string
}

// runClientPod runs busybox's command (e.g. wget) once in a restricted pod
// of ns, waits for it to succeed and returns its output.
func runClientPod(t *testing.T, ns string, command ...string) string {
	t.Helper()
	return runOnce(t, ns, oneShot{image: clientImage, command: append([]string{"/bin/busybox"}, command...)})
}

// runOnce runs p in a restricted pod of ns, waits for it to succeed and
// returns its output.
func runOnce(t *testing.T, ns string, p oneShot) string {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "client-"},
		Spec: corev1.PodSpec{
			RestartPolicy:      corev1.RestartPolicyNever,
			ServiceAccountName: p.serviceAccount,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "client", Image: p.image, ImagePullPolicy: corev1.PullIfNotPresent, Command: p.command,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	created, err := clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the client pod: %v", err)
	}
	var phase corev1.PodPhase
	err = wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := clientset.CoreV1().Pods(ns).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = got.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, logErr := clientset.CoreV1().Pods(ns).GetLogs(created.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("%s in a pod: %s, %v; its output (%v):\n%s", strings.Join(p.command, " "), phase, err, logErr, logs)
	}
	_ = clientset.CoreV1().Pods(ns).Delete(ctx, created.Name, metav1.DeleteOptions{})
	return string(logs)
}
