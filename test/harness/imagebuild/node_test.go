package imagebuild_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// TestRealNodePullsTheEchoServerFromTheRegistry runs the echo server built
// from the Dockerfile on a real node, which pulls it from the registry
// (imagePullPolicy Always): the pod runs the image the build pushed,
// becomes Ready and answers at its address.
func TestRealNodePullsTheEchoServerFromTheRegistry(t *testing.T) {
	env, images := needBuilder(t)
	if why := realnode.Unavailable(); why != "" {
		t.Skip(why)
	}
	bins, err := realnode.LocateBinaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	cbins, err := simcluster.LocateBinaries(reporoot.Must(t))
	if err != nil {
		t.Skip(err)
	}
	ctx := context.Background()
	cluster, err := simcluster.Start(ctx, simcluster.Options{Binaries: cbins, WorkDir: t.TempDir()})
	if err != nil {
		t.Fatalf("starting the cluster: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	node := startNode(ctx, t, realnode.Options{Binaries: bins, Kubeconfig: cluster.KubeconfigPath(),
		PodNetwork: simcluster.PodNetwork, ServiceNetwork: simcluster.ServiceNetwork,
		Root: filepath.Join(t.TempDir(), "node"), HTTPRegistries: []string{env.Registry.Host}})

	echo := images["echo-server"]
	cs := kubernetes.NewForConfigOrDie(cluster.Config())
	pod := runPod(ctx, t, cs, node, echo.Ref)
	status := pod.Status.ContainerStatuses[0]
	if !strings.HasSuffix(status.ImageID, "@"+echo.Digest) {
		t.Errorf("the container runs image %s, the build pushed %s", status.ImageID, echo.Digest)
	}
	answer := get(t, "http://"+pod.Status.PodIP+":8080/pulled")
	if !strings.Contains(answer, "Hello from the registry") || !strings.Contains(answer, "/pulled") {
		t.Errorf("the pod answered %q", answer)
	}
}

// startNode starts a real node, waiting while another one runs on the
// machine (realnode's tests, run in parallel by go test ./...).
func startNode(ctx context.Context, t *testing.T, o realnode.Options) *realnode.Node {
	t.Helper()
	var node *realnode.Node
	waited := false
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, 20*time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		node, err = realnode.Start(ctx, o)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if !waited {
				t.Log("another real node runs on this machine: waiting for it to stop")
				waited = true
			}
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	t.Cleanup(func() { _ = node.Stop() })
	return node
}

// runPod runs image as a restricted pod on the node, pulled at every
// start, and waits for it to be Ready through its readiness probe.
func runPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node, image string) *corev1.Pod {
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

func get(t *testing.T, url string) string {
	t.Helper()
	// No proxy: the pod's address is on the node's bridge.
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", url, resp.StatusCode, b, err)
	}
	return string(b)
}
