package realnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The node's fixed names and ranges. PodCIDR lies in the simulated
// cluster's pod network (simcluster.PodNetwork), far from the fake nodes'
// ranges, which start at its beginning.
const (
	// NodeName is the node's name and hostname.
	NodeName = "real-node-0"
	// Bridge is the pods' bridge; its address is NodeIP.
	Bridge = "echonode0"
	// PodCIDR holds the node's pod addresses; NodeIP is its first.
	PodCIDR = "10.255.0.0/24"
	NodeIP  = "10.255.0.1"
	// DefaultRoot is where a node keeps its state when Options.Root is empty.
	DefaultRoot = "/tmp/echo-realnode"
	// containerdNamespace is the containerd namespace of the CRI plugin.
	containerdNamespace = "k8s.io"
)

// Options configure a node.
type Options struct {
	Binaries
	// Kubeconfig is the kubeconfig the kubelet registers with (Start's;
	// Join takes its own).
	Kubeconfig string
	// PodNetwork and ServiceNetwork are the cluster's ranges, blackholed on
	// the host (simcluster.PodNetwork, simcluster.ServiceNetwork).
	PodNetwork, ServiceNetwork string
	// Root holds the node's state and logs; empty means DefaultRoot. It is
	// wiped at Start and removed by Stop, but for its logs/ directory.
	Root string
	// Images are image archives (docker-archive or OCI tar) imported into
	// the node's image store before the kubelet starts, as if pulled.
	Images []string
	// ImageArchives are archives of NodeImages by reference, built from
	// their Dockerfile (imagebuild's BuildNodeImages); the node writes
	// those it lacks from their binaries.
	ImageArchives map[string]string
	// ClusterServices makes the node a working cluster node: kube-proxy
	// (nftables) serves ClusterIP Services to pods, CoreDNS answers
	// cluster.local at the kube-dns Service, and local-path-provisioner
	// binds PersistentVolumeClaims of the default StorageClass to
	// directories under Root. Start waits for them all. They need the
	// Binaries of the services; see the package doc for what they cost.
	ClusterServices bool
	// HTTPRegistries are registries (host:port) that containerd pulls from
	// over plain HTTP, such as imagebuild's on loopback.
	HTTPRegistries []string
	// TLSRegistries are registries (host:port) that containerd pulls from
	// over HTTPS, each with the file of the CA that signed its certificate.
	TLSRegistries map[string]string
	// Mirror, when set, is a plain-HTTP registry (host:port) that serves
	// every other registry's images: quay.io/org/name:tag is pulled as
	// Mirror/org/name:tag, docker.io/library/busybox as
	// Mirror/library/busybox. No pull then leaves the machine.
	Mirror string
	// StartTimeout bounds Join; 0 means 2 minutes, 3 with ClusterServices.
	StartTimeout time.Duration
}

// Node is a running real node.
type Node struct {
	opts       Options
	lock       *os.File
	procs      []*process
	ipForward  string
	containerd string // the socket
}

// Start prepares a node and joins it to the cluster of o.Kubeconfig: it
// is Prepare, then Join.
func Start(ctx context.Context, o Options) (*Node, error) {
	n, err := Prepare(o)
	if err != nil {
		return nil, err
	}
	if err := n.Join(ctx, o.Kubeconfig); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	return n, nil
}

// Prepare takes the machine's lock of real nodes, cleans what an earlier
// node left behind and brings up the node's network: the bridge with
// NodeIP and the host's routes. A control plane can then listen on NodeIP
// (simcluster.Options.ServeAddress), where the node's pods reach it through
// the "kubernetes" Service, before the node joins. On error, what it did is
// undone.
func Prepare(o Options) (_ *Node, err error) {
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 2 * time.Minute
		if o.ClusterServices {
			o.StartTimeout = 3 * time.Minute
		}
	}
	if o.ClusterServices {
		if err := o.checkClusterServices(); err != nil {
			return nil, err
		}
	}
	n := &Node{opts: o, containerd: filepath.Join(o.Root, "containerd", "containerd.sock")}
	if n.lock, err = lockMachine(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	// A crashed node may have had another root: the lock file names it.
	if err := cleanUpRoot(recordedRoot(n.lock), o.Root); err != nil {
		return nil, fmt.Errorf("cleaning what an earlier node left: %w", err)
	}
	if err := n.cleanUp(); err != nil {
		return nil, fmt.Errorf("cleaning what an earlier node left: %w", err)
	}
	if err := recordRoot(n.lock, o.Root); err != nil {
		return nil, err
	}
	for _, dir := range []string{n.path("logs"), n.path("containerd"), n.path("kubelet"), n.path("cni")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	if err := n.setUpNetwork(); err != nil {
		return nil, fmt.Errorf("setting up the pod network: %w", err)
	}
	return n, nil
}

// Join starts containerd, imports the images and starts the kubelet, which
// registers with the cluster of kubeconfig, and returns once the node is
// Ready; with ClusterServices, once kube-proxy has written its rules,
// CoreDNS is Ready and local-path-provisioner runs. It takes at most
// Options.StartTimeout. On error, the caller stops the node.
func (n *Node) Join(ctx context.Context, kubeconfig string) error {
	n.opts.Kubeconfig = kubeconfig
	ctx, cancel := context.WithTimeout(ctx, n.opts.StartTimeout)
	defer cancel()
	if err := n.startContainerd(ctx); err != nil {
		return err
	}
	if err := n.importImages(ctx); err != nil {
		return err
	}
	if err := n.startKubelet(); err != nil {
		return err
	}
	if !n.opts.ClusterServices {
		return n.waitReady(ctx)
	}
	return n.startServices(ctx)
}

// startServices creates the objects of the cluster's services, waits for
// the node to be Ready, starts kube-proxy and waits for the services' pods.
func (n *Node) startServices(ctx context.Context) error {
	// The objects first: the scheduler places the pods as soon as the node
	// is Ready.
	if err := n.createServices(ctx); err != nil {
		return err
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	if err := n.startKubeProxy(ctx); err != nil {
		return err
	}
	return n.waitServices(ctx)
}

// Stop stops the node and removes everything it left, but for its logs.
func (n *Node) Stop() error {
	var errs []error
	for i := len(n.procs) - 1; i >= 0; i-- {
		errs = append(errs, n.procs[i].stop())
	}
	n.procs = nil
	errs = append(errs, n.cleanUp())
	if n.lock != nil {
		errs = append(errs, recordRoot(n.lock, ""))
	}
	if n.ipForward != "" {
		errs = append(errs, os.WriteFile(ipForwardFile, []byte(n.ipForward), 0o644))
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
		n.lock = nil
	}
	return errors.Join(errs...)
}

// LogDir holds the logs of the node's processes.
func (n *Node) LogDir() string { return n.path("logs") }

// ContainerdSocket is the address of the node's containerd.
func (n *Node) ContainerdSocket() string { return n.containerd }

func (n *Node) path(elem ...string) string {
	return filepath.Join(append([]string{n.opts.Root}, elem...)...)
}

// waitReady waits for the node to register and report Ready.
func (n *Node) waitReady(ctx context.Context) error {
	cs, err := clientFor(n.opts.Kubeconfig)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if exited := n.exited(); exited != "" {
			return false, fmt.Errorf("%s exited (logs in %s)", exited, n.LogDir())
		}
		node, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				last = string(c.Status) + ": " + c.Message
				return c.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not Ready (%s): %w (logs in %s)", NodeName, last, err, n.LogDir())
	}
	return nil
}

// exited names a process of the node that has exited, or is "".
func (n *Node) exited() string {
	for _, p := range n.procs {
		if p.done() {
			return p.name
		}
	}
	return ""
}

// lockWait bounds the wait for another node of this machine to stop: go
// test runs packages side by side, and more than one starts real nodes.
const lockWait = 30 * time.Minute

// lockMachine takes the machine-wide lock of real nodes, waiting while
// another node holds it. The lock file holds the root of the node that
// holds it, or held it when it crashed (recordRoot).
func lockMachine() (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "echo-realnode.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for waited := false; ; waited = true {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return f, nil
		case !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline):
			_ = f.Close()
			return nil, fmt.Errorf("another real node runs on this machine: %w", err)
		case !waited:
			fmt.Fprintln(os.Stderr, "realnode: waiting for another real node of this machine to stop")
		}
		time.Sleep(time.Second)
	}
}

// HoldMachine takes the machine-wide lock of real nodes, waiting while a
// node runs, and keeps it until release: no node starts meanwhile. A test
// that checks that a stopped node left nothing on the host (its bridge,
// routes, processes, mounts) reads the host while it holds it.
func HoldMachine() (release func() error, err error) {
	lock, err := lockMachine()
	if err != nil {
		return nil, err
	}
	return lock.Close, nil
}

// recordedRoot is the root the lock file names, or "".
func recordedRoot(lock *os.File) string {
	data, err := os.ReadFile(lock.Name())
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// recordRoot writes root into the lock file, which the node holds.
func recordRoot(lock *os.File, root string) error {
	if err := lock.Truncate(0); err != nil {
		return err
	}
	_, err := lock.WriteAt([]byte(root), 0)
	return err
}

func clientFor(kubeconfig string) (*kubernetes.Clientset, error) {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
