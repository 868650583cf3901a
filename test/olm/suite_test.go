//go:build linux

package olm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/cmd/manager/app"
	"github.com/echo-operator/echo-operator/test/harness/managerbin"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

const (
	// olmNamespace is where olm and catalog run and CatalogSources live.
	olmNamespace = "olm"
	// globalNamespace holds the OperatorGroup for all namespaces.
	globalNamespace = "operators"

	// packageName is the operator's package in the catalog.
	packageName = "echo-operator"

	// Set in the re-executed test binary: the network namespace is ready.
	envInNetns = "ECHO_OLM_TEST_IN_NETNS"
	// The manager binary the outer test binary built, and the directory
	// for logs and the cluster, which it removes.
	envManager = "ECHO_OLM_TEST_MANAGER"
	envWorkDir = "ECHO_OLM_TEST_WORK_DIR"

	timeout  = 2 * time.Minute
	interval = 200 * time.Millisecond
)

var (
	repoRoot string
	workDir  string
	// kubectl is the cluster's kubectl, for what users apply with it.
	kubectl   string
	tools     olmTools
	manager   string
	cluster   *simcluster.Cluster
	cfg       *rest.Config
	k8sClient client.Client
	clientset *kubernetes.Clientset

	processes processGroup
	// OLM's operators.
	olmProcess, catalogProcess *process
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the OLM tests in -short mode")
		os.Exit(0)
	}
	if os.Getenv(envInNetns) == "" {
		os.Exit(outside())
	}
	os.Exit(inside(m))
}

// outside runs in the test binary go test started: it finds the binaries,
// builds the manager (the module proxy may be needed, and the network
// namespace has no network) and runs the tests in a network namespace.
func outside() int {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return fail(err)
	}
	_, err = simcluster.LocateBinaries(root)
	if err == nil {
		_, err = locateOLMTools(root)
	}
	if err != nil {
		const why = "the OLM tests need the control plane and OLM's binaries; run `make test-olm`:\n%v\n"
		if os.Getenv("CI") != "" {
			fmt.Fprintf(os.Stderr, why, err) // CI must run every test
			return 1
		}
		fmt.Printf("SKIP: "+why, err)
		return 0
	}
	work, err := os.MkdirTemp("", "echo-olm-")
	if err != nil {
		return fail(err)
	}
	defer func() { _ = os.RemoveAll(work) }()
	bin, err := managerbin.Build(context.Background(), root, work)
	if err != nil {
		return fail(err)
	}

	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	cmd := exec.Command(self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), envInNetns+"=1", envManager+"="+bin, envWorkDir+"="+work)
	cmd.SysProcAttr = netnsSysProcAttr()
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("running the tests in a network namespace of their own "+
			"(needs unprivileged user namespaces or root): %w", err))
	}
	// Pass Ctrl-C and termination on, and remove the work directory once
	// the tests have stopped.
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		for sig := range signals {
			_ = cmd.Process.Signal(sig)
		}
	}()
	if err := cmd.Wait(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		return fail(err)
	}
	return 0
}

// netnsSysProcAttr puts the child into a new network namespace; without
// root, in a new user namespace too, mapped to root there so that it may
// bring up its loopback interface.
func netnsSysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	return attr
}

// loopbackUp brings up lo, which a new network namespace has down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading the flags of lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing up lo: %w", err)
	}
	return nil
}

// addLoopbackAddress brings ip up on lo, as an alias of its own, so that
// what listens in this network namespace answers at it. Adding an address
// already there is not an error.
func addLoopbackAddress(ip string) error {
	addr := net.ParseIP(ip).To4()
	if addr == nil {
		return fmt.Errorf("%q is not an IPv4 address", ip)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	loopbackAliases.mu.Lock()
	defer loopbackAliases.mu.Unlock()
	if loopbackAliases.added[ip] {
		return nil
	}
	ifr, err := unix.NewIfreq(fmt.Sprintf("lo:%d", len(loopbackAliases.added)+1))
	if err != nil {
		return err
	}
	if err := ifr.SetInet4Addr(addr); err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFADDR, ifr); err != nil {
		return fmt.Errorf("adding %s to lo: %w", ip, err)
	}
	loopbackAliases.added[ip] = true
	return nil
}

var loopbackAliases = struct {
	mu    sync.Mutex
	added map[string]bool
}{added: map[string]bool{}}

// inside runs in the network namespace: the cluster, OLM, then the tests.
func inside(m *testing.M) int {
	if err := loopbackUp(); err != nil {
		return fail(err)
	}
	var err error
	if repoRoot, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		return fail(err)
	}
	manager, workDir = os.Getenv(envManager), os.Getenv(envWorkDir)
	bins, err := simcluster.LocateBinaries(repoRoot)
	if err != nil {
		return fail(err)
	}
	kubectl = bins.Kubectl
	if tools, err = locateOLMTools(repoRoot); err != nil {
		return fail(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cluster, err = simcluster.Start(ctx, simcluster.Options{
		Binaries: bins,
		// OLM's CRDs alone, no Prometheus Operator's: the bundle must
		// install on a plain cluster. The operator's come from its bundle,
		// through OLM.
		CRDDirectoryPaths:   []string{tools.CRDs},
		WorkDir:             filepath.Join(workDir, "cluster"),
		DefaultStorageClass: true,
		// The network namespace has no default route to take one from.
		AdvertiseAddress: "127.0.0.1",
		// The live API is reached at its pods' addresses, which the tests
		// bring up on this network namespace's loopback.
		AggregatorRouting: true,
	})
	if err != nil {
		return fail(fmt.Errorf("starting the simulated cluster: %w", err))
	}
	defer func() {
		if err := cluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the simulated cluster:", err)
		}
	}()
	cfg = cluster.Config()
	if k8sClient, err = client.New(cfg, client.Options{Scheme: app.NewScheme()}); err != nil {
		return fail(err)
	}
	clientset = kubernetes.NewForConfigOrDie(cfg)
	if err := startOLM(ctx); err != nil {
		processes.stopAll()
		processes.dumpLogs()
		return fail(err)
	}
	code := m.Run()
	processes.stopAll()
	if code != 0 {
		processes.dumpLogs()
		dumpLog(filepath.Join(workDir, "cluster", "kube-controller-manager.log"))
	}
	return code
}

// startOLM prepares the cluster as OLM's chart would (namespaces, the
// OLMConfig) and starts olm and catalog with the admin kubeconfig.
func startOLM(ctx context.Context) error {
	for _, ns := range []string{olmNamespace, globalNamespace} {
		if err := createNamespace(ctx, ns); err != nil {
			return err
		}
	}
	olmConfig := &unstructured.Unstructured{}
	olmConfig.SetAPIVersion("operators.coreos.com/v1")
	olmConfig.SetKind("OLMConfig")
	olmConfig.SetName("cluster")
	if err := k8sClient.Create(ctx, olmConfig); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the OLMConfig: %w", err)
	}
	kubeconfig := cluster.KubeconfigPath()
	// olm reads its kubeconfig only from $KUBECONFIG.
	var err error
	if olmProcess, err = processes.start("olm", tools.OLM, []string{
		"KUBECONFIG=" + kubeconfig, "OPERATOR_NAMESPACE=" + olmNamespace, "OPERATOR_NAME=olm-operator",
	}, "--namespace="+olmNamespace); err != nil {
		return err
	}
	// The images are those of the registry pods and bundle unpack Jobs the
	// catalog operator would run; neither is used here (the CatalogSource
	// has an address, the bundles carry their manifests).
	catalogProcess, err = processes.start("catalog", tools.Catalog, []string{"KUBECONFIG=" + kubeconfig},
		"--kubeconfig="+kubeconfig,
		"--namespace="+olmNamespace,
		"--configmapServerImage=registry.example.test/olm/configmap-server:unused",
		"--opmImage=registry.example.test/olm/opm:unused",
		"--util-image=registry.example.test/olm/olm:unused",
		"--set-workload-user-id=false",
	)
	return err
}

// expectOLMRunning, called from the function Eventually polls, ends the
// wait at once when olm or catalog has exited.
func expectOLMRunning() {
	for _, p := range []*process{olmProcess, catalogProcess} {
		if !p.running() {
			StopTrying(p.name + " exited; see " + p.logPath).Now()
		}
	}
}

func createNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	return nil
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// olmTools holds the paths of OLM's binaries and CRDs.
type olmTools struct {
	OLM, Catalog, CRDs, OPM string
}

// locateOLMTools finds the binaries of `hack/build-olm.sh`: each of the
// environment variables OLM, OLM_CATALOG, OLM_CRDS and OPM overrides one
// path; the rest come from the script's `paths` command. Each must exist.
func locateOLMTools(root string) (olmTools, error) {
	var t olmTools
	fields := []struct {
		env   string
		field *string
		dir   bool
	}{
		{"OLM", &t.OLM, false}, {"OLM_CATALOG", &t.Catalog, false},
		{"OLM_CRDS", &t.CRDs, true}, {"OPM", &t.OPM, false},
	}
	paths := map[string]string{}
	out, err := exec.Command("bash", filepath.Join(root, "hack", "build-olm.sh"), "paths").Output()
	if err != nil {
		return t, fmt.Errorf("hack/build-olm.sh paths: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			paths[k] = v
		}
	}
	var errs []error
	for _, f := range fields {
		if *f.field = os.Getenv(f.env); *f.field == "" {
			*f.field = paths[f.env]
		}
		st, err := os.Stat(*f.field)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w (run `make olm`, or set %s)", f.env, err, f.env))
		case f.dir != st.IsDir() || (!f.dir && st.Mode().Perm()&0o111 == 0):
			errs = append(errs, fmt.Errorf("%s: %s is not what `make olm` builds", f.env, *f.field))
		}
	}
	return t, errors.Join(errs...)
}

// process is a long-running program of the suite, logging to a file.
type process struct {
	name, logPath string
	cmd           *exec.Cmd
	log           *os.File
	done          chan struct{}
}

// processGroup tracks the suite's processes, to stop them all at the end.
type processGroup struct {
	mu    sync.Mutex
	procs []*process
}

// start runs binary with args and env (added to the test's environment)
// from the repository root, logging to <workDir>/<name>-<n>.log, n
// counting the processes started: each keeps a log of its own, whose end
// a failure shows. The process dies with the test binary.
func (g *processGroup) start(name, binary string, env []string, args ...string) (*process, error) {
	g.mu.Lock()
	logPath := filepath.Join(workDir, fmt.Sprintf("%s-%d.log", name, len(g.procs)+1))
	g.mu.Unlock()
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	// The manager reads watches.yaml and the chart relative to it.
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, logPath: logPath, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(p.done)
	}()
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return p, nil
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after 20s, and waits.
func (p *process) stop() error {
	if !p.running() {
		return nil
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(20 * time.Second):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("%s did not stop within 20s of SIGTERM and was killed", p.name)
}

func (g *processGroup) stopAll() {
	g.mu.Lock()
	procs := g.procs
	g.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

func (g *processGroup) dumpLogs() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		dumpLog(p.logPath)
	}
}

// dumpLog prints the errors, leader election and live API registration
// lines of a log, which its start may hold, then its end.
func dumpLog(path string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var notable []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, `"level":"error"`) || strings.Contains(line, "leader") || strings.Contains(line, `"logger":"servingcert"`) {
			notable = append(notable, line)
		}
	}
	if len(notable) > 40 {
		notable = notable[len(notable)-40:]
	}
	fmt.Fprintf(os.Stderr, "---- errors, leadership and live API registration in %s ----\n%s\n", path, strings.Join(notable, "\n"))
	const tail = 12000
	if len(raw) > tail {
		raw = raw[len(raw)-tail:]
	}
	fmt.Fprintf(os.Stderr, "---- last lines of %s ----\n%s\n", path, raw)
}
