package realnode_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// TestNodePullsTheEchoServerFromARegistry builds the echo server from the
// Dockerfile with BuildKit into a registry on loopback
// (test/harness/imagebuild) and runs it on a real node, which pulls it
// from there (imagePullPolicy Always, plain HTTP through
// Options.HTTPRegistries): the container runs the image the build pushed,
// becomes Ready and answers at its pod address. It lives here, with the
// other real-node tests, because only one node runs on a machine at a time
// and go test runs packages side by side.
func TestNodePullsTheEchoServerFromARegistry(t *testing.T) {
	bins := needNode(t)
	images := needImageBuilder(t)
	root := reporoot.Must(t)
	ctx := context.Background()
	env, err := imagebuild.Start(ctx, imagebuild.Options{Binaries: images, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the image builder: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	built, err := env.BuildProject(ctx, root, "0.0.0-realnode-test", "realnode-test")
	if err != nil {
		t.Fatal(err)
	}
	var echo imagebuild.ProjectImage
	for _, img := range built {
		if img.Target == "echo-server" {
			echo = img
		}
	}

	cluster := startCluster(t, root)
	node, err := realnode.Start(ctx, realnode.Options{Binaries: bins, Kubeconfig: cluster.KubeconfigPath(),
		PodNetwork: simcluster.PodNetwork, ServiceNetwork: simcluster.ServiceNetwork,
		Root: filepath.Join(t.TempDir(), "node"), HTTPRegistries: []string{env.Registry.Host}})
	if err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	t.Cleanup(func() { _ = node.Stop() })

	cs := kubernetes.NewForConfigOrDie(cluster.Config())
	pod := runPulledPod(ctx, t, cs, node, echo.Ref)
	if id := pod.Status.ContainerStatuses[0].ImageID; !strings.HasSuffix(id, "@"+echo.Digest) {
		t.Errorf("the container runs image %s, the build pushed %s", id, echo.Digest)
	}
	answer := get(t, "http://"+pod.Status.PodIP+":8080/pulled")
	if !strings.Contains(answer, "Hello from the registry") || !strings.Contains(answer, "/pulled") {
		t.Errorf("the pod answered %q", answer)
	}
}

// needImageBuilder skips where no image can be built, or fails under CI
// when the image tools are missing.
func needImageBuilder(t *testing.T) imagebuild.Binaries {
	t.Helper()
	if why := imagebuild.Unavailable(); why != "" {
		t.Skip(why)
	}
	bins, err := imagebuild.LocateBinaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return bins
}

// runPulledPod runs image as a restricted pod on the node, pulled at every
// start, and waits for it to be Ready through its readiness probe.
func runPulledPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node, image string) *corev1.Pod {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pulled", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "echo"},
		Spec: corev1.PodSpec{
			NodeName: realnode.NodeName,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "echo", Image: image, ImagePullPolicy: corev1.PullAlways,
				Args:           []string{"--message=Hello from the registry"},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: probe,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the pod: %v", err)
	}
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns.Name).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return len(p.Status.ContainerStatuses) == 1, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod not Ready: %v; status %+v (node logs in %s)", err, got.Status, node.LogDir())
	}
	return got
}
