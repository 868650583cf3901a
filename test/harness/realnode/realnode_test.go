package realnode_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/test/harness/localcluster"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

const (
	echoImage    = "localhost/echo-operator/echo-server:realnode-test"
	toolboxImage = "localhost/echo-operator/toolbox:realnode-test"
	testNS       = "realnode"
)

// TestNodeRunsARestrictedPodAndLeavesNothing starts a real node with the
// cluster's services beside a simulated control plane, runs the echo
// server as a pod under the restricted Pod Security Standard, reads its
// answer at its pod address and the routes of its network namespace, has
// pods reach it through a ClusterIP Service, by IP and by its DNS name,
// and write to a volume the node provisions, then stops the node and
// checks nothing is left.
func TestNodeRunsARestrictedPodAndLeavesNothing(t *testing.T) {
	bins := needNode(t)
	needServices(t, bins)
	root := reporoot.Must(t)
	image := echoServerImage(t, root)
	toolbox := toolboxImageFor(t, bins)
	ctx := context.Background()
	nodeRoot := filepath.Join(t.TempDir(), "node")
	cniBefore := hostCNIState()
	started := time.Now()
	node, cluster, err := startNodeAndCluster(ctx, root, t.TempDir(), realnode.Options{Binaries: bins, Root: nodeRoot,
		Images: []string{image, toolbox}, ClusterServices: true})
	if err != nil {
		t.Fatalf("starting the node: %v", err)
	}
	t.Logf("the control plane, the node and its services started in %s", time.Since(started).Round(time.Second))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = node.Stop()
		}
		_ = cluster.Stop()
	})

	cs := kubernetes.NewForConfigOrDie(cluster.Config())
	pod := runEchoPod(ctx, t, cs, node)
	answer := get(t, "http://"+pod.Status.PodIP+":8080/realnode")
	if !strings.Contains(answer, "Hello from a real node") || !strings.Contains(answer, "/realnode") {
		t.Errorf("the pod answered %q", answer)
	}
	if answer := portForward(t, cluster, pod); !strings.Contains(answer, "Hello from a real node") {
		t.Errorf("through kubectl port-forward the pod answered %q", answer)
	}
	checkRoutes(t, nodeRoot, pod.Status.PodIP)
	// kube-apiserver reads the container's log from the kubelet, at the
	// node's address on the bridge.
	logs, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || !strings.Contains(string(logs), "/realnode") {
		t.Errorf("the pod's log through the API: %v\n%s", err, logs)
	}

	svc := exposeEcho(ctx, t, cs)
	t.Run("Service", func(t *testing.T) {
		out := runToCompletion(ctx, t, cs, node, "service-client", nil,
			"wget -q -O - http://"+svc.Spec.ClusterIP+"/service")
		if !strings.Contains(out, "Hello from a real node") || !strings.Contains(out, "/service") {
			t.Errorf("through the Service's cluster IP %s the pod answered %q", svc.Spec.ClusterIP, out)
		}
	})
	t.Run("DNS", func(t *testing.T) {
		name := svc.Name + "." + svc.Namespace + ".svc." + realnode.ClusterDomain
		out := runToCompletion(ctx, t, cs, node, "dns-client", nil,
			"nslookup "+name+" && wget -q -O - http://"+name+"/by-name && wget -q -O - http://"+svc.Name+"/short-name"+
				" && if nslookup echo.example. >/dev/null 2>&1; then echo OUTSIDE-RESOLVED; fi")
		if !strings.Contains(out, svc.Spec.ClusterIP) {
			t.Errorf("%s did not resolve to %s: %q", name, svc.Spec.ClusterIP, out)
		}
		if !strings.Contains(out, "/by-name") || !strings.Contains(out, "/short-name") {
			t.Errorf("the Service by its names answered %q", out)
		}
		// CoreDNS forwards nothing: a name outside the cluster has no answer.
		if strings.Contains(out, "OUTSIDE-RESOLVED") {
			t.Errorf("a name outside the cluster resolved: %q", out)
		}
	})
	t.Run("PersistentVolumeClaim", func(t *testing.T) {
		checkLocalVolume(ctx, t, cs, node)
	})

	if err := node.Stop(); err != nil {
		t.Fatalf("stopping the node: %v", err)
	}
	stopped = true
	checkNothingLeft(t, nodeRoot, cniBefore)
}

// exposeEcho gives the echo pod a ClusterIP Service, port 80, and waits
// for its endpoint.
func exposeEcho(ctx context.Context, t *testing.T, cs kubernetes.Interface) *corev1.Service {
	t.Helper()
	svc, err := cs.CoreV1().Services(testNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "echo"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "echo"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		slices, err := cs.DiscoveryV1().EndpointSlices(testNS).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=echo"})
		if err != nil {
			return false, err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the Service has no ready endpoint: %v", err)
	}
	return svc
}

// checkLocalVolume has a restricted pod with an fsGroup write to a claim of
// the default StorageClass, reads the file in the node's directory, and
// checks that deleting the claim removes the directory.
func checkLocalVolume(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node) {
	t.Helper()
	pvc, err := cs.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	volume := corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}
	out := runToCompletion(ctx, t, cs, node, "volume-writer", &volume,
		"echo written > /data/file && id -u && stat -c %g /data")
	if fields := strings.Fields(out); len(fields) < 2 || fields[0] != "1000" || fields[1] != "2000" {
		t.Errorf("the writer's uid and the volume's group = %q, want 1000 and the fsGroup 2000", out)
	}
	pvc, err = cs.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, pvc.Name, metav1.GetOptions{})
	if err != nil || pvc.Status.Phase != corev1.ClaimBound {
		t.Fatalf("the claim is not bound: %v %+v", err, pvc.Status)
	}
	pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var dir string
	switch {
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
	}
	if !strings.HasPrefix(dir, node.VolumeDir()+"/") {
		t.Fatalf("the volume's directory %q is not under %s", dir, node.VolumeDir())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "file")); err != nil || string(b) != "written\n" {
		t.Errorf("the node's %s/file: %q, %v", dir, b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "file")); err == nil {
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1000 {
			t.Errorf("the file belongs to uid %d, want the pod's 1000", st.Uid)
		}
	}

	// The claim goes once no pod uses it.
	if err := cs.CoreV1().Pods(testNS).Delete(ctx, "volume-writer", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().PersistentVolumeClaims(testNS).Delete(ctx, pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var state string
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		left, err := cs.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
		if err == nil {
			state = "the volume is " + string(left.Status.Phase) + " " + left.Status.Message
			return false, nil
		} else if !apierrors.IsNotFound(err) {
			return false, err
		}
		_, err = os.Stat(dir)
		state = "the directory is left"
		return errors.Is(err, os.ErrNotExist), nil
	})
	if err != nil {
		t.Errorf("deleting the claim: %s (%s): %v (node logs in %s)", state, dir, err, node.LogDir())
	}
}

// runToCompletion runs script with the toolbox's sh in a restricted pod on
// the node (uid 1000, fsGroup 2000), with volume mounted at /data when
// given, and returns its log once it has succeeded.
func runToCompletion(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node, name string,
	volume *corev1.Volume, script string) string {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			// Scheduled, not bound: a claim of WaitForFirstConsumer waits
			// for the scheduler's choice.
			NodeSelector: map[string]string{"kubernetes.io/hostname": realnode.NodeName},
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "run", Image: toolboxImage, ImagePullPolicy: corev1.PullNever,
				Command: []string{"/bin/sh", "-c", script},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	if volume != nil {
		pod.Spec.Volumes = []corev1.Volume{*volume}
		pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: volume.Name, MountPath: "/data"}}
	}
	if _, err := cs.CoreV1().Pods(testNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the restricted namespace refused the pod %s: %v", name, err)
	}
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = p
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, nil
	})
	logs, logErr := cs.CoreV1().Pods(testNS).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || got.Status.Phase != corev1.PodSucceeded {
		t.Fatalf("the pod %s did not succeed: %v; status %+v; log %s %v (node logs in %s)", name, err, got.Status, logs, logErr, node.LogDir())
	}
	if logErr != nil {
		t.Fatalf("the log of %s: %v", name, logErr)
	}
	return string(logs)
}

// TestStartCleansWhatACrashedNodeLeft SIGKILLs a process that runs a node
// with the cluster's services and a pod, which leaves the pods' shims and
// containers, their mounts and cgroups, kube-proxy and its nftables
// tables, the bridge and the routes behind; a new node on the same root
// cleans them at Start, and its Stop leaves nothing.
func TestStartCleansWhatACrashedNodeLeft(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		runCrashChild(t)
		return
	}
	bins := needNode(t)
	needServices(t, bins)
	root := reporoot.Must(t)
	image := echoServerImage(t, root)
	nodeRoot := filepath.Join(t.TempDir(), "node")
	cniBefore := hostCNIState()

	// The child runs the control plane too, on the node's address: it dies
	// with the child, as it would with a crashed test.
	child := exec.Command(os.Args[0], "-test.run=^TestStartCleansWhatACrashedNodeLeft$", "-test.v")
	child.Env = append(os.Environ(), crashChildEnv+"=1", "CRASH_CLUSTER_DIR="+t.TempDir(),
		"CRASH_NODE_ROOT="+nodeRoot, "CRASH_IMAGE="+image)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitForLine(t, out, crashReady)
	_ = child.Process.Kill()
	_ = child.Wait()
	if shims, _ := exec.Command("pgrep", "-f", "containerd-shim-runc-v2.*"+nodeRoot+"/").Output(); len(shims) == 0 {
		t.Fatal("the crashed node left no shim: the test proves nothing")
	}
	if tables, err := realnode.KubeProxyTables(); err != nil || len(tables) == 0 {
		t.Fatalf("the crashed node left no kube-proxy table (%v): the test proves nothing", err)
	}

	// The next node has a root of its own, as the next test run's has: the
	// machine's lock names the crashed node's.
	nextRoot := filepath.Join(t.TempDir(), "node")
	node, cluster, err := startNodeAndCluster(context.Background(), root, t.TempDir(),
		realnode.Options{Binaries: bins, Root: nextRoot, Images: []string{image}})
	if err != nil {
		t.Fatalf("starting a node over a crashed one: %v", err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	checkNothingLeftUnder(t, nodeRoot)
	if err := node.Stop(); err != nil {
		t.Fatalf("stopping the node: %v", err)
	}
	checkNothingLeft(t, nodeRoot, cniBefore)
	checkNothingLeft(t, nextRoot, cniBefore)
}

const (
	crashChildEnv = "REALNODE_CRASH_CHILD"
	crashReady    = "crash child: pod ready"
)

// runCrashChild runs a node and a pod, says so, and waits to be killed.
func runCrashChild(t *testing.T) {
	bins, err := realnode.LocateBinaries()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	node, cluster, err := startNodeAndCluster(ctx, reporoot.Must(t), os.Getenv("CRASH_CLUSTER_DIR"), realnode.Options{Binaries: bins,
		Root: os.Getenv("CRASH_NODE_ROOT"), Images: []string{os.Getenv("CRASH_IMAGE")}, ClusterServices: true})
	if err != nil {
		t.Fatal(err)
	}
	runEchoPod(ctx, t, kubernetes.NewForConfigOrDie(cluster.Config()), node)
	_, _ = os.Stdout.WriteString(crashReady + "\n")
	select {}
}

func waitForLine(t *testing.T, r io.Reader, line string) {
	t.Helper()
	found := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.Contains(sc.Text(), line) {
				found <- true
				go func() { _, _ = io.Copy(io.Discard, r) }()
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Fatal("the crash child ended before its pod was ready")
		}
	case <-time.After(4 * time.Minute):
		t.Fatal("the crash child did not get its pod ready in time")
	}
}

// portForward runs kubectl port-forward to the pod, as a user would, and
// returns the pod's answer through the forwarded local port: kube-apiserver
// to the kubelet, the kubelet to containerd's stream server, both on the
// node's bridge.
func portForward(t *testing.T, cluster *simcluster.Cluster, pod *corev1.Pod) string {
	t.Helper()
	kubectl := os.Getenv("KUBECTL")
	if kubectl == "" {
		t.Skip("$KUBECTL is not set: run the tests through make")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", cluster.KubeconfigPath(), "port-forward", "-n", pod.Namespace,
		"pod/"+pod.Name, "--address", "127.0.0.1", ":8080")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	defer cancel()
	// "Forwarding from 127.0.0.1:<port> -> 8080"
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "Forwarding from 127.0.0.1:") {
				line <- sc.Text()
				break
			}
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	var forwarding string
	select {
	case forwarding = <-line:
	case <-time.After(time.Minute):
	}
	local, _, ok := strings.Cut(strings.TrimPrefix(forwarding, "Forwarding from "), " ")
	if !ok {
		t.Fatalf("kubectl port-forward did not say where it listens")
	}
	return get(t, "http://"+local+"/forwarded")
}

func needNode(t *testing.T) realnode.Binaries {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a real node: not in -short mode")
	}
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
	return bins
}

// needServices skips, or fails under CI, when the binaries of the cluster's
// services are missing.
func needServices(t *testing.T, bins realnode.Binaries) {
	t.Helper()
	for env, p := range map[string]string{"KUBE_PROXY": bins.KubeProxy, "COREDNS": bins.CoreDNS,
		"LOCAL_PATH_PROVISIONER": bins.LocalPathProvisioner, "BUSYBOX": bins.Busybox} {
		if p != "" {
			continue
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("$%s is not set: run `make node`, or the tests through make", env)
		}
		t.Skipf("$%s is not set: run `make node`, or the tests through make", env)
	}
}

// toolboxImageFor writes an image of the static busybox with the commands
// the test's client pods run.
func toolboxImageFor(t *testing.T, bins realnode.Binaries) string {
	t.Helper()
	links := map[string]string{}
	for _, cmd := range []string{"sh", "wget", "nslookup", "id", "stat", "echo"} {
		links["/bin/"+cmd] = "busybox"
	}
	archive := filepath.Join(t.TempDir(), "toolbox.tar")
	if err := realnode.WriteImageWithLinks(archive, toolboxImage, realnode.ImageConfig{Env: []string{"PATH=/bin"}},
		map[string]string{"/bin/busybox": bins.Busybox}, links); err != nil {
		t.Fatal(err)
	}
	return archive
}

// startNodeAndCluster starts a local cluster (test/harness/localcluster)
// of the node o and a control plane in workDir.
func startNodeAndCluster(ctx context.Context, root, workDir string, o realnode.Options) (*realnode.Node, *simcluster.Cluster, error) {
	bins, err := simcluster.LocateBinaries(root)
	if err != nil {
		return nil, nil, err
	}
	c, err := localcluster.Start(ctx, localcluster.Options{Node: o, Cluster: simcluster.Options{Binaries: bins, WorkDir: workDir}})
	if err != nil {
		return nil, nil, err
	}
	return c.Node, c.Cluster, nil
}

// echoServerImage builds the echo server and writes it as an image archive
// shaped as the Dockerfile's echo-server stage: the binary as entrypoint,
// the nonroot user.
func echoServerImage(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "echo-server")
	build := exec.Command("go", "build", "-o", bin, "./cmd/echo-server")
	build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the echo server: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "echo-server.tar")
	if err := realnode.WriteImage(archive, echoImage, realnode.ImageConfig{Entrypoint: []string{"/echo-server"}, User: "65532:65532"},
		map[string]string{"/echo-server": bin}); err != nil {
		t.Fatal(err)
	}
	return archive
}

// runEchoPod runs the echo server on the node in a namespace that enforces
// the restricted Pod Security Standard, and waits for it to be Ready
// through its readiness probe.
func runEchoPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, node *realnode.Node) *corev1.Pod {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromInt32(8080)}}, PeriodSeconds: 1}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "echo", Labels: map[string]string{"app": "echo"}},
		Spec: corev1.PodSpec{
			NodeName: realnode.NodeName,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "echo", Image: echoImage, ImagePullPolicy: corev1.PullNever,
				Args:           []string{"--message=Hello from a real node"},
				Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: probe,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the restricted namespace refused the pod: %v", err)
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
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod not Ready: %v; status %+v (node logs in %s)", err, got.Status, node.LogDir())
	}
	return got
}

// checkRoutes reads, without sending anything, that the pod cannot reach
// beyond the machine and that the host drops the cluster's unused ranges.
func checkRoutes(t *testing.T, nodeRoot, podIP string) {
	t.Helper()
	netns := podNetns(t, nodeRoot, podIP)
	// Off the machine, and the simulated cluster's pod range beyond the
	// node's bridge.
	for _, addr := range []string{"1.1.1.1", "10.200.0.1"} {
		if out, err := realnode.RouteGet(netns, addr); err == nil || !strings.Contains(out, "unreachable") {
			t.Errorf("inside the pod, ip route get %s = %q, %v; want Network is unreachable", addr, out, err)
		}
	}
	if out, err := realnode.RouteGet("", "10.96.0.10"); err == nil || !strings.Contains(out, "Invalid argument") && !strings.Contains(out, "blackhole") {
		t.Errorf("on the host, ip route get 10.96.0.10 (a cluster IP) = %q, %v; want a blackhole", out, err)
	}
	// The host's own paths into the simulated cluster's wide pod range
	// (where its resolver may be) stay as they were.
	if out, err := realnode.RouteGet("", "10.200.0.1"); strings.Contains(out, "blackhole") || strings.Contains(out, "Invalid argument") {
		t.Errorf("on the host, ip route get 10.200.0.1 = %q, %v; want the host's own route", out, err)
	}
}

// podNetns finds the network namespace of the pod of address podIP among
// those containerd keeps under its state directory.
func podNetns(t *testing.T, nodeRoot, podIP string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(nodeRoot, "containerd", "state", "*", "netns", "cni-*"))
	for _, netns := range matches {
		out, _ := exec.Command("nsenter", "--net="+netns, "ip", "-o", "-4", "addr", "show").Output()
		if strings.Contains(string(out), " "+podIP+"/") {
			return netns
		}
	}
	t.Fatalf("no network namespace of %v holds %s", matches, podIP)
	return ""
}

// hostCNIState lists what CNI keeps in the host's own directory, which a
// node must not write to.
func hostCNIState() []string {
	var files []string
	_ = filepath.WalkDir("/var/lib/cni", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	return files
}

func checkNothingLeft(t *testing.T, nodeRoot string, cniBefore []string) {
	t.Helper()
	for _, f := range hostCNIState() {
		if !slices.Contains(cniBefore, f) {
			t.Errorf("CNI state is left on the host: %s", f)
		}
	}
	if out, _ := exec.Command("ip", "link", "show", "dev", realnode.Bridge).CombinedOutput(); !strings.Contains(string(out), "does not exist") {
		t.Errorf("the bridge is left: %s", out)
	}
	for _, cidr := range []string{realnode.PodCIDR, simcluster.PodNetwork, simcluster.ServiceNetwork} {
		if out, _ := exec.Command("ip", "route", "show", "exact", cidr).Output(); strings.TrimSpace(string(out)) != "" {
			t.Errorf("a route for %s is left: %s", cidr, out)
		}
	}
	if left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", "k8s.io")); len(left) > 0 {
		t.Errorf("cgroups are left: %v", left)
	}
	checkNothingLeftUnder(t, nodeRoot)
	if tables, err := realnode.KubeProxyTables(); err != nil || len(tables) > 0 {
		t.Errorf("kube-proxy's nftables tables are left: %v %v", tables, err)
	}
}

// checkNothingLeftUnder fails the test when a node's root holds mounts,
// processes that name it, or files but its logs.
func checkNothingLeftUnder(t *testing.T, nodeRoot string) {
	t.Helper()
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), nodeRoot) {
		t.Errorf("mounts under %s are left", nodeRoot)
	}
	entries, _ := os.ReadDir(nodeRoot)
	for _, e := range entries {
		if e.Name() != "logs" {
			t.Errorf("%s is left in the node's root", e.Name())
		}
	}
	if out, _ := exec.Command("pgrep", "-f", nodeRoot+"/").Output(); len(out) > 0 {
		t.Errorf("processes are left: %s", out)
	}
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
		t.Fatalf("GET %s: %d %s %v", url, resp.StatusCode, b, errors.Join(err))
	}
	return string(b)
}
