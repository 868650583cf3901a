package simcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	// KwokNodeAnnotation marks the nodes KWOK manages (value "fake").
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// StorageClassName is the default StorageClass created when
	// Options.DefaultStorageClass is set.
	StorageClassName = "standard"
	// KwokVolumeProvisioner is that StorageClass's provisioner; KWOK's volume
	// stages play its part.
	KwokVolumeProvisioner = "kwok.x-k8s.io/volume"
	// ServiceNetwork is the range the cluster's Services get their
	// cluster IPs from.
	ServiceNetwork = "10.96.0.0/16"
	// PodNetwork holds the pod CIDRs of every node.
	PodNetwork = "10.128.0.0/9"

	contextName       = "simcluster"
	adminUser         = "simcluster-admin"
	defaultStartLimit = 3 * time.Minute
	childStopTimeout  = 10 * time.Second
	envtestTimeout    = 60 * time.Second
	pollInterval      = 100 * time.Millisecond

	// The service-account signing key envtest's APIServer generates in its
	// CertDir and passes as --service-account-signing-key-file.
	envtestSAKeyFile = "sa-signer.key"
)

// Options configures a simulated cluster.
type Options struct {
	Binaries

	// CRDDirectoryPaths lists directories (or files) of CRD manifests to
	// install before Start returns. Every path must exist.
	CRDDirectoryPaths []string

	// Nodes is the number of fake nodes; 0 means 1.
	Nodes int

	// WorkDir receives the logs (<name>.log) and the admin kubeconfig
	// (kubeconfig). Empty means a new temporary directory, removed by Stop.
	// A given directory is kept with the logs; its state/ subdirectory
	// (etcd data, certificates, keys) is wiped at Start, and Stop removes it
	// and the kubeconfig.
	WorkDir string

	// ControllerManagerQPS and ControllerManagerBurst are
	// kube-controller-manager's client limits (and kube-scheduler's);
	// 0 means 500 and 1000.
	ControllerManagerQPS   float32
	ControllerManagerBurst int

	// Stdout, when set, also receives every component's output, each line
	// prefixed with "[<name>] ". The log files are written either way.
	Stdout io.Writer

	// DefaultStorageClass creates the default StorageClass "standard"
	// (immediate binding) and has KWOK provision and bind a PersistentVolume
	// for each of its claims.
	DefaultStorageClass bool

	// StartTimeout bounds Start after the binaries are found; 0 means 3m.
	StartTimeout time.Duration

	// HeldJobPodNamespaces lists namespaces whose Job pods KWOK does not
	// complete: they stay Running until a test ends each one by annotating
	// it with JobPodExitCodeAnnotation (and optionally
	// JobPodMessageAnnotation and JobPodDisruptionAnnotation), as a
	// kubelet would report the container's end, a failure or an eviction.
	HeldJobPodNamespaces []string

	// AdvertiseAddress is kube-apiserver's --advertise-address, the
	// endpoint of the "kubernetes" Service. Empty lets kube-apiserver take
	// the address of the default route's interface; a network namespace
	// without a default route has none, and needs 127.0.0.1 here.
	AdvertiseAddress string

	// ServeAddress is the address kube-apiserver listens on and, unless
	// AdvertiseAddress is set, advertises as the "kubernetes" Service's
	// endpoint; empty means 127.0.0.1. Pods of a real node reach
	// kube-apiserver through that Service, so they need an address of the
	// node's bridge here (realnode.NodeIP), which must exist before Start.
	ServeAddress string

	// NoFakeNodes starts no KWOK and registers no fake node: the cluster's
	// nodes are real ones (test/harness/realnode) that join after Start.
	// DefaultStorageClass and HeldJobPodNamespaces need KWOK and cannot be
	// set with it.
	NoFakeNodes bool

	// AggregatorRouting makes kube-apiserver reach extension API servers
	// at the endpoints of their Service (--enable-aggregator-routing), a
	// pod's address, rather than at the Service's cluster IP, which no
	// proxy serves here. Only a test that brings the pod's address up in
	// a network namespace of its own can use it.
	AggregatorRouting bool
}

// Cluster is a running simulated cluster.
type Cluster struct {
	opts           Options
	workDir        string
	removeWorkDir  bool
	stateDir       string
	pidDir         string
	kubeconfigPath string

	cp       *envtest.ControlPlane
	config   *rest.Config
	client   kubernetes.Interface
	children []*child
	starter  *starter
	reaper   *reaper
	closers  []io.Closer
	out      io.Writer // shared, locked Options.Stdout

	stopOnce sync.Once
	stopErr  error

	compMu sync.Mutex // serialises the component stops and starts of restart.go
}

// Start runs etcd and kube-apiserver (through envtest), installs the CRDs,
// then starts kube-controller-manager, kube-scheduler and KWOK, registers
// the fake nodes and returns once they are Ready and a pod has been
// scheduled and run. ctx bounds only the start; call Stop to tear down.
// On error everything started so far is stopped, and the work directory,
// even a temporary one, is kept for its logs.
func Start(ctx context.Context, opts Options) (_ *Cluster, retErr error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	opts.setDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			// Keep even a temporary work directory: its logs explain
			// the failure.
			c.removeWorkDir = false
			_ = c.Stop()
		}
	}()
	if err := c.start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// check reports invalid options: missing binaries, missing CRD paths or a
// negative node count.
func (o *Options) check() error {
	if err := o.Validate(); err != nil {
		return err
	}
	for _, p := range o.CRDDirectoryPaths {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("CRD path: %w", err)
		}
	}
	if o.Nodes < 0 {
		return fmt.Errorf("invalid node count %d", o.Nodes)
	}
	if o.NoFakeNodes && (o.Nodes > 0 || o.DefaultStorageClass || len(o.HeldJobPodNamespaces) > 0) {
		return errors.New("fake nodes, the default StorageClass and held Job pods need KWOK, which NoFakeNodes turns off")
	}
	for _, ns := range o.HeldJobPodNamespaces {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("held Job pod namespace %q: %s", ns, strings.Join(errs, "; "))
		}
	}
	return nil
}

// setDefaults replaces the zero values that stand for a default.
func (o *Options) setDefaults() {
	if o.Nodes == 0 && !o.NoFakeNodes {
		o.Nodes = 1
	}
	if o.ControllerManagerQPS == 0 {
		o.ControllerManagerQPS = 500
	}
	if o.ControllerManagerBurst == 0 {
		o.ControllerManagerBurst = 1000
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = defaultStartLimit
	}
}

// newCluster creates the work directory (or makes opts.WorkDir absolute and
// creates it) and sets up a Cluster that has started nothing yet but its
// process starter.
func newCluster(opts Options) (*Cluster, error) {
	workDir, temporary, err := makeWorkDir(opts.WorkDir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		opts:           opts,
		workDir:        workDir,
		removeWorkDir:  temporary,
		stateDir:       filepath.Join(workDir, "state"),
		kubeconfigPath: filepath.Join(workDir, "kubeconfig"),
	}
	c.pidDir = filepath.Join(c.stateDir, "pids")
	if opts.Stdout != nil {
		c.out = &lockedWriter{w: opts.Stdout}
	}
	c.starter = newStarter()
	return c, nil
}

// makeWorkDir returns the absolute work directory, creating it; an empty dir
// means a new temporary directory, reported as temporary.
func makeWorkDir(dir string) (path string, temporary bool, err error) {
	if dir == "" {
		path, err = os.MkdirTemp("", "simcluster-")
		return path, err == nil, err
	}
	if path, err = filepath.Abs(dir); err != nil {
		return "", false, err
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return "", false, err
	}
	return path, false, nil
}

// start brings the cluster up step by step; the caller stops it on error.
func (c *Cluster) start(ctx context.Context) error {
	if err := c.resetStateDir(); err != nil {
		return err
	}
	if err := c.armReaper(); err != nil {
		return err
	}
	if err := c.startControlPlane(); err != nil {
		return err
	}
	if err := c.installCRDs(); err != nil {
		return err
	}
	if err := c.startComponents(); err != nil {
		return err
	}
	if err := c.createObjects(ctx); err != nil {
		return err
	}
	return c.waitReady(ctx)
}

// resetStateDir wipes the state directory left by an earlier run and
// creates its subdirectories.
func (c *Cluster) resetStateDir() error {
	if err := os.RemoveAll(c.stateDir); err != nil {
		return err
	}
	for _, d := range []string{c.pidDir, filepath.Join(c.stateDir, "pki"), filepath.Join(c.stateDir, "kwok")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	return nil
}

// armReaper starts the reaper, which cleans up what Stop would if this
// process dies first: the state directory and the kubeconfig, or the whole
// work directory if it is a temporary one.
func (c *Cluster) armReaper() error {
	remove := []string{c.stateDir, c.kubeconfigPath}
	if c.removeWorkDir {
		remove = []string{c.workDir}
	}
	r, err := startReaper(c.pidDir, remove...)
	if err != nil {
		return err
	}
	c.reaper = r
	return nil
}

// Config returns a copy of the admin (system:masters) client configuration.
func (c *Cluster) Config() *rest.Config { return rest.CopyConfig(c.config) }

// KubeconfigPath is the admin kubeconfig file in the work directory.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfigPath }

// WorkDir is the directory holding the logs and the kubeconfig.
func (c *Cluster) WorkDir() string { return c.workDir }

// Stop stops KWOK, kube-scheduler and kube-controller-manager (SIGTERM, then
// SIGKILL after 10s), then kube-apiserver and etcd, and removes the state
// directory (and the work directory if it was a temporary one). It is safe
// to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for _, ch := range c.children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ch.stop(childStopTimeout); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if c.cp != nil {
		if err := c.cp.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping kube-apiserver/etcd: %w", err))
		}
	}
	c.starter.close()
	c.reaper.disarm()
	for _, cl := range c.closers {
		_ = cl.Close()
	}
	if c.removeWorkDir {
		errs = append(errs, os.RemoveAll(c.workDir))
	} else {
		errs = append(errs, os.RemoveAll(c.stateDir))
		if err := os.Remove(c.kubeconfigPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// logWriter opens <WorkDir>/<name>.log, teed to Options.Stdout if set.
func (c *Cluster) logWriter(name string) (io.Writer, string, error) {
	path := filepath.Join(c.workDir, name+".log")
	f, err := os.Create(path)
	if err != nil {
		return nil, "", err
	}
	c.closers = append(c.closers, f)
	if c.out == nil {
		return f, path, nil
	}
	return io.MultiWriter(f, &prefixWriter{prefix: "[" + name + "] ", w: c.out}), path, nil
}

func (c *Cluster) startControlPlane() error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdPort, etcdPeerPort, apiPort := ports[0], ports[1], ports[2]

	// envtest's Environment.Start resolves the binaries itself
	// (TEST_ASSET_*, KUBEBUILDER_ASSETS, BinaryAssetsDirectory) and
	// overwrites ControlPlane.APIServer.Path and Etcd.Path, so the control
	// plane is started directly and the CRDs are installed like Start does.
	// The paths are pid-recording wrappers around the real binaries.
	etcdPath := filepath.Join(c.stateDir, "etcd.sh")
	if err := writePidWrapper(etcdPath, c.opts.Etcd, filepath.Join(c.pidDir, "etcd.pid")); err != nil {
		return err
	}
	apiPath := filepath.Join(c.stateDir, "kube-apiserver.sh")
	if err := writePidWrapper(apiPath, c.opts.APIServer, filepath.Join(c.pidDir, "kube-apiserver.pid")); err != nil {
		return err
	}
	etcdLog, _, err := c.logWriter("etcd")
	if err != nil {
		return err
	}
	apiLog, _, err := c.logWriter("kube-apiserver")
	if err != nil {
		return err
	}

	etcd := &envtest.Etcd{
		Path:         etcdPath,
		DataDir:      filepath.Join(c.stateDir, "etcd"),
		URL:          &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(etcdPort))},
		Out:          etcdLog,
		Err:          etcdLog,
		StartTimeout: envtestTimeout,
		StopTimeout:  childStopTimeout,
	}
	etcd.Configure().
		Set("listen-peer-urls", "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(etcdPeerPort))).
		Set("initial-advertise-peer-urls", "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(etcdPeerPort))).
		Set("initial-cluster", "default=http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(etcdPeerPort)))

	serveAddress := cmp.Or(c.opts.ServeAddress, "127.0.0.1")
	api := &envtest.APIServer{
		Path:    apiPath,
		CertDir: filepath.Join(c.stateDir, "pki"),
		SecureServing: envtest.SecureServing{
			ListenAddr: envtest.ListenAddr{Address: serveAddress, Port: strconv.Itoa(apiPort)},
		},
		Out:          apiLog,
		Err:          apiLog,
		StartTimeout: envtestTimeout,
		StopTimeout:  childStopTimeout,
	}
	api.Configure().
		// envtest disables the ServiceAccount admission plugin because it
		// runs no controllers; here the serviceaccount controller creates
		// each namespace's "default" account, so keep the real behaviour
		// (a pod naming a missing account is rejected). TaintNodesByCondition
		// gives every new node a not-ready taint that only the (disabled)
		// node-lifecycle controller would remove.
		Set("disable-admission-plugins", "TaintNodesByCondition").
		Set("service-cluster-ip-range", ServiceNetwork).
		// A real node (test/harness/realnode) is reached at its address on
		// the node's bridge, never by a host name that could resolve
		// elsewhere.
		Set("kubelet-preferred-address-types", "InternalIP")
	if advertise := cmp.Or(c.opts.AdvertiseAddress, c.opts.ServeAddress); advertise != "" {
		api.Configure().Set("advertise-address", advertise)
	}
	// The ServiceAccount issuer's discovery document names its keys where
	// kube-apiserver serves them, not at the advertised address: an OpenID
	// relying party on this machine (an S3 server's STS) fetches them.
	api.Configure().Set("service-account-jwks-uri",
		(&url.URL{Scheme: "https", Host: net.JoinHostPort(serveAddress, strconv.Itoa(apiPort)), Path: "/openid/v1/jwks"}).String())
	if err := writeServingCert(api, serveAddress); err != nil {
		return fmt.Errorf("kube-apiserver's serving certificate: %w", err)
	}
	// On SIGTERM, drain the requests in flight, then give open watches 2s
	// instead of the 60s request timeout: StopComponent stays quick.
	api.Configure().Set("shutdown-send-retry-after", "true")
	if c.opts.AggregatorRouting {
		api.Configure().Set("enable-aggregator-routing", "true")
	}
	if err := configureAggregation(api, api.CertDir); err != nil {
		return fmt.Errorf("front-proxy certificates: %w", err)
	}

	c.cp = &envtest.ControlPlane{Etcd: etcd, APIServer: api, KubectlPath: c.opts.Kubectl}
	if err := c.cp.Start(); err != nil {
		return fmt.Errorf("starting etcd and kube-apiserver: %w (logs in %s)", err, c.workDir)
	}

	admin, err := c.cp.AddUser(envtest.User{Name: adminUser, Groups: []string{"system:masters"}},
		&rest.Config{QPS: 1000, Burst: 2000})
	if err != nil {
		return fmt.Errorf("provisioning admin user: %w", err)
	}
	c.config = admin.Config()
	if err := writeKubeconfig(c.kubeconfigPath, c.config); err != nil {
		return err
	}
	c.client, err = kubernetes.NewForConfig(c.config)
	return err
}

func (c *Cluster) installCRDs() error {
	if len(c.opts.CRDDirectoryPaths) == 0 {
		return nil
	}
	_, err := envtest.InstallCRDs(c.config, envtest.CRDInstallOptions{
		Paths:              c.opts.CRDDirectoryPaths,
		ErrorIfPathMissing: true,
	})
	if err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	return nil
}

// componentKubeconfig provisions a system:masters user for a component and
// writes its kubeconfig into the state directory.
func (c *Cluster) componentKubeconfig(user, name string) (string, error) {
	u, err := c.cp.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, &rest.Config{})
	if err != nil {
		return "", fmt.Errorf("provisioning user %s: %w", user, err)
	}
	path := filepath.Join(c.stateDir, name+".kubeconfig")
	return path, writeKubeconfig(path, u.Config())
}

func (c *Cluster) startComponents() error {
	kcmKubeconfig, err := c.componentKubeconfig("system:kube-controller-manager", "kube-controller-manager")
	if err != nil {
		return err
	}
	schedKubeconfig, err := c.componentKubeconfig("system:kube-scheduler", "kube-scheduler")
	if err != nil {
		return err
	}
	kwokKubeconfig, err := c.componentKubeconfig("system:kwok-controller", "kwok")
	if err != nil {
		return err
	}

	saKey := filepath.Join(c.cp.APIServer.CertDir, envtestSAKeyFile)
	if _, err := os.Stat(saKey); err != nil {
		return fmt.Errorf("service-account signing key of envtest's kube-apiserver: %w", err)
	}
	rootCA := filepath.Join(c.stateDir, "serving-ca.crt")
	if err := os.WriteFile(rootCA, c.cp.APIServer.CA, 0o600); err != nil {
		return err
	}
	qps := strconv.FormatFloat(float64(c.opts.ControllerManagerQPS), 'f', -1, 32)
	burst := strconv.Itoa(c.opts.ControllerManagerBurst)

	if err := c.startChild("kube-controller-manager", c.opts.ControllerManager, nil,
		"--kubeconfig="+kcmKubeconfig,
		"--leader-elect=false",
		// Serve nothing: no port to allocate and no delegated authn/z.
		"--secure-port=0",
		// Nodes are fake and have no kubelet: nothing may taint or evict
		// them for missing heartbeats, and there is no cloud.
		"--controllers=*,-node-lifecycle-controller,-node-ipam-controller,"+
			"-cloud-node-lifecycle-controller,-service-lb-controller,-node-route-controller",
		"--kube-api-qps="+qps,
		"--kube-api-burst="+burst,
		"--service-account-private-key-file="+saKey,
		"--root-ca-file="+rootCA,
		"--concurrent-deployment-syncs=10",
		"--concurrent-replicaset-syncs=10",
		"--concurrent-statefulset-syncs=10",
		"--concurrent-daemonset-syncs=10",
		"--concurrent-job-syncs=10",
		"--concurrent-gc-syncs=30",
	); err != nil {
		return err
	}

	schedConfig := filepath.Join(c.stateDir, "kube-scheduler.yaml")
	if err := os.WriteFile(schedConfig, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %s
  burst: %s
leaderElection:
  leaderElect: false
`, schedKubeconfig, qps, burst)), 0o600); err != nil {
		return err
	}
	if err := c.startChild("kube-scheduler", c.opts.Scheduler, nil,
		"--config="+schedConfig,
		"--secure-port=0",
	); err != nil {
		return err
	}

	if c.opts.NoFakeNodes {
		return nil
	}
	stages, err := c.kwokStages()
	if err != nil {
		return err
	}
	kwokArgs := []string{
		"--kubeconfig=" + kwokKubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=fake",
		// No --server-address/--node-port: KWOK then opens no port.
	}
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config="+s)
	}
	// KWOK also loads $KWOK_WORKDIR/kwok.yaml (default ~/.kwok) if present;
	// point it at an empty directory.
	env := []string{"KWOK_WORKDIR=" + filepath.Join(c.stateDir, "kwok")}
	return c.startChild("kwok", c.opts.Kwok, env, kwokArgs...)
}

func (c *Cluster) startChild(name, binary string, env []string, args ...string) error {
	out, logPath, err := c.logWriter(name)
	if err != nil {
		return err
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = c.stateDir
	cmd.SysProcAttr = childSysProcAttr()
	ch := &child{
		name:    name,
		cmd:     cmd,
		logPath: logPath,
		pidFile: filepath.Join(c.pidDir, name+".pid"),
		done:    make(chan struct{}),
	}
	if err := c.starter.start(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	_ = os.WriteFile(ch.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	c.children = append(c.children, ch)
	go func() {
		ch.err = cmd.Wait()
		_ = os.Remove(ch.pidFile)
		close(ch.done)
	}()
	return nil
}

// kwokStages returns the KWOK stage files to load; the volume stages are
// rewritten from KWOK's "kwok-volume" class to StorageClassName, and the
// pod-complete stage to skip the held Job pods' namespaces.
func (c *Cluster) kwokStages() ([]string, error) {
	var files []string
	for _, rel := range []string{
		"node/fast/node-initialize.yaml",
		"node/heartbeat/node-heartbeat.yaml",
		"pod/fast/pod-ready.yaml",
		"pod/fast/pod-complete.yaml",
		"pod/fast/pod-delete.yaml",
	} {
		p := filepath.Join(c.opts.KwokStagesDir, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("kwok stage: %w", err)
		}
		files = append(files, p)
	}
	dir := filepath.Join(c.stateDir, "kwok-stages")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if len(c.opts.HeldJobPodNamespaces) > 0 {
		held, err := heldJobPodStages(dir, files[3], c.opts.HeldJobPodNamespaces)
		if err != nil {
			return nil, err
		}
		files = append(append(files[:3], files[4:]...), held...)
	}
	if !c.opts.DefaultStorageClass {
		return files, nil
	}
	for _, name := range []string{"pvc-provision.yaml", "pv-bind.yaml", "pvc-delete.yaml", "pv-delete.yaml"} {
		b, err := os.ReadFile(filepath.Join(c.opts.KwokStagesDir, "volume", "fast", name))
		if err != nil {
			return nil, fmt.Errorf("kwok stage: %w", err)
		}
		const from = "'kwok-volume'"
		if !strings.Contains(string(b), from) {
			return nil, fmt.Errorf("kwok stage volume/fast/%s no longer selects %s", name, from)
		}
		out := filepath.Join(dir, name)
		if err := os.WriteFile(out, []byte(strings.ReplaceAll(string(b), from, "'"+StorageClassName+"'")), 0o600); err != nil {
			return nil, err
		}
		files = append(files, out)
	}
	return files, nil
}

// exitedChild returns a component that has already exited, if any.
func (c *Cluster) exitedChild() *child {
	for _, ch := range c.children {
		if ch.exited() {
			return ch
		}
	}
	return nil
}

// waitFor polls cond until it holds, failing early if a component exits.
// Errors from cond are taken as "not yet" and reported on timeout.
func (c *Cluster) waitFor(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if ch := c.exitedChild(); ch != nil {
			return false, ch.exitError()
		}
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err == nil {
		return nil
	}
	if last != nil {
		// Only the outcome of the wait is wrapped. last, the condition's
		// latest transient error (a NotFound, say), is there to read, not
		// for callers' errors.Is/As to match.
		return fmt.Errorf("waiting for %s: %w (last error: %s; logs in %s)", what, err, last.Error(), c.workDir)
	}
	return fmt.Errorf("waiting for %s: %w (logs in %s)", what, err, c.workDir)
}

func (c *Cluster) waitReady(ctx context.Context) error {
	if err := c.waitFor(ctx, "nodes to become Ready", func(ctx context.Context) (bool, error) {
		for i := range c.opts.Nodes {
			n, err := c.client.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
			if err != nil || !nodeReady(n) {
				return false, err
			}
		}
		return true, nil
	}); err != nil {
		return err
	}

	// The serviceaccount controller of kube-controller-manager creates this;
	// pods in kube-system need it because of the ServiceAccount admission.
	if err := c.waitFor(ctx, "kube-controller-manager to create kube-system/default ServiceAccount", func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	}); err != nil {
		return err
	}

	if c.opts.NoFakeNodes {
		return nil
	}
	// Smoke test of kube-scheduler and KWOK: a pod gets bound and Ready.
	pods := c.client.CoreV1().Pods(metav1.NamespaceSystem)
	smoke := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "simcluster-smoke"},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{{Name: "smoke", Image: "registry.k8s.io/pause:3.10"}},
			TerminationGracePeriodSeconds: new(int64),
			AutomountServiceAccountToken:  new(bool),
		},
	}
	if err := c.waitFor(ctx, "creating the smoke-test pod", func(ctx context.Context) (bool, error) {
		_, err := pods.Create(ctx, smoke, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), err
	}); err != nil {
		return err
	}
	if err := c.waitFor(ctx, "the smoke-test pod to be scheduled and Ready", func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, smoke.Name, metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != "" && podReady(p), err
	}); err != nil {
		return err
	}
	// A plain delete: KWOK's pod-delete stage finishes it.
	if err := pods.Delete(ctx, smoke.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the smoke-test pod: %w", err)
	}
	return c.waitFor(ctx, "the smoke-test pod to be deleted", func(ctx context.Context) (bool, error) {
		_, err := pods.Get(ctx, smoke.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// pids returns the pid of every process of the cluster, by name.
func (c *Cluster) pids() map[string]int {
	m := map[string]int{}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if pid, ok := readPid(filepath.Join(c.pidDir, name+".pid")); ok {
			m[name] = pid
		}
	}
	for _, ch := range c.children {
		m[ch.name] = ch.cmd.Process.Pid
	}
	return m
}

// writeKubeconfig writes a kubeconfig with a single context "simcluster".
func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[contextName] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	kc.CurrentContext = contextName
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*kc, path)
}
