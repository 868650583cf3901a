//go:build linux

package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/test/harness/simcluster"
	"github.com/echo-operator/echo-operator/test/harness/simsuite"
)

// restartDelay is how long the suite waits before it starts an operator
// that exited on its own again, as the kubelet restarts a Deployment's
// container after a backoff.
const restartDelay = time.Second

// leaseName is the manager's leader election Lease (LeaderElectionID in
// cmd/manager/app).
const leaseName = "echo-operator.echo.dev"

// operatorProcess is the manager binary, run as a user would run it out of
// cluster: from the project's directory (watches.yaml, helm-charts/) with a
// kubeconfig. Like a Deployment's pod, it is started again when it exits
// without being asked to: the manager exits by design when it loses its
// Lease (an API server too slow to answer a renewal in time), and its
// successor must pick up the work. Those exits are recorded; a test that
// must not cause one checks unexpectedExits.
type operatorProcess struct {
	binary, kubeconfig, logPath string
	// metricsAddr is where the manager serves its metrics: HTTPS,
	// authenticated and authorized by the API server, as deployed, with
	// the certificate of metricsCertDir, which metricsCA issued.
	metricsAddr, metricsCertDir, metricsCA string
	// liveAPIAddr is where the manager serves the live API, with the
	// certificate of liveAPICertDir, which liveAPICA issued.
	liveAPIAddr, liveAPICertDir, liveAPICA string

	mu sync.Mutex
	// env is added to the environment of the processes started from now
	// on (restartWith).
	env []string
	// run is the running process; nil once stopped or killed.
	run *operatorRun
	// exits are the exits nobody asked for, each as the log says it.
	exits []string
	// stopped is set once the suite has stopped the operator for good.
	stopped bool
	// gen counts the processes handed to callers to end; a restart
	// scheduled under an older count is dropped.
	gen int
}

// operatorRun is one process of the operator.
type operatorRun struct {
	proc *simsuite.Manager
	// done is closed once the process has exited and its watcher is done
	// with it (its log closed).
	done chan struct{}
}

func (p *operatorProcess) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *operatorProcess) startLocked() error {
	if p.run != nil {
		return fmt.Errorf("the operator already runs, pid %d", p.run.proc.Pid())
	}
	proc, err := simsuite.StartManager(simsuite.ManagerOptions{
		Binary: p.binary, Dir: repoRoot, Kubeconfig: p.kubeconfig, LogPath: p.logPath, Name: "operator",
		Env: append([]string{"RELATED_IMAGE_ECHO=" + echoImage, "WATCH_NAMESPACE=", "STORAGE_ENDPOINTS=" + sharedStorageEndpoint}, p.env...),
		Args: []string{
			"--leader-elect",
			"--leader-election-namespace=" + operatorNamespace,
			// Short leases, so a killed operator's successor takes over
			// quickly, with room for an API server slowed by the other
			// test packages running beside this one.
			"--leader-elect-lease-duration=8s",
			"--leader-elect-renew-deadline=6s",
			"--leader-elect-retry-period=1s",
			"--health-probe-bind-address=0",
			"--metrics-bind-address=" + p.metricsAddr,
			"--metrics-cert-dir=" + p.metricsCertDir,
			"--live-api-bind-address=" + p.liveAPIAddr,
			"--live-api-cert-dir=" + p.liveAPICertDir,
			"--storage-egress-allow=" + storageHost + "/32",
			"--cluster-networks=" + simcluster.ServiceNetwork + "," + simcluster.PodNetwork,
		},
	})
	if err != nil {
		return err
	}
	r := &operatorRun{proc: proc, done: make(chan struct{})}
	p.run = r
	go p.watch(r)
	return nil
}

// watch waits for r to exit and, unless it was stopped or killed on
// purpose, records the exit and starts the operator again.
func (p *operatorProcess) watch(r *operatorRun) {
	err := r.proc.Err()
	p.mu.Lock()
	defer p.mu.Unlock()
	asked := p.run != r
	if !asked {
		p.recordExit(r, err)
		p.run = nil
	}
	_ = r.proc.Log.Close()
	close(r.done)
	if asked {
		return
	}
	gen := p.gen
	time.AfterFunc(restartDelay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.gen != gen || p.run != nil || p.stopped {
			return // killed, started again or stopped meanwhile
		}
		if err := p.startLocked(); err != nil {
			p.exits = append(p.exits, "restarting: "+err.Error())
		}
	})
}

// recordExit notes an exit nobody asked for, in the log and in exits.
func (p *operatorProcess) recordExit(r *operatorRun, err error) {
	exit := fmt.Sprintf("==== operator pid %d exited on its own: %v ====", r.proc.Pid(), err)
	_, _ = fmt.Fprintln(r.proc.Log, exit)
	p.exits = append(p.exits, exit)
}

// pid is the running operator's process ID, 0 when none runs.
func (p *operatorProcess) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run == nil {
		return 0
	}
	return p.run.proc.Pid()
}

// unexpectedExits are the exits nobody asked for so far.
func (p *operatorProcess) unexpectedExits() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.exits...)
}

// take hands the running process to the caller, who ends it: the watcher
// then neither records its exit nor restarts it, and a restart already
// scheduled is dropped.
func (p *operatorProcess) take() *operatorRun {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	r := p.run
	p.run = nil
	return r
}

// hadExited records, once its watcher is done with it, a process taken
// with take that turned out to have exited on its own before.
func (p *operatorProcess) hadExited(r *operatorRun) {
	<-r.done
	p.mu.Lock()
	defer p.mu.Unlock()
	p.exits = append(p.exits, fmt.Sprintf("==== operator pid %d had exited on its own: %v ====", r.proc.Pid(), r.proc.Err()))
}

// kill ends the operator at once, as an OOM kill or a node loss would.
func (p *operatorProcess) kill() {
	r := p.take()
	if r == nil {
		return
	}
	if !r.proc.Running() {
		p.hadExited(r)
		return
	}
	r.proc.Kill()
	<-r.done
}

// restartWith replaces the operator as a new version of it would be
// rolled out: the running process is asked to shut down, and once it has,
// another starts with env added to its environment (none: the suite's
// own), and restartWith returns once it leads. Later restarts keep env.
func (p *operatorProcess) restartWith(env ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	leases := clientset.CoordinationV1().Leases(operatorNamespace)
	var previous string
	if l, err := leases.Get(ctx, leaseName, metav1.GetOptions{}); err == nil {
		previous = ptr.Deref(l.Spec.HolderIdentity, "")
	}
	if err := p.replace(env); err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		return holder != "" && holder != previous, nil
	})
}

// replace stops the running process, if any, and starts another with env.
func (p *operatorProcess) replace(env []string) error {
	if r := p.take(); r != nil {
		err := r.proc.Stop(45 * time.Second)
		if errors.Is(err, os.ErrProcessDone) {
			p.hadExited(r)
		}
		<-r.done
		if err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("stopping the operator: %w", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.env = env
	return p.startLocked()
}

// stop asks the operator to shut down gracefully, waits for it, and keeps
// it from being started again.
func (p *operatorProcess) stop() error {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	r := p.take()
	if r == nil {
		return nil
	}
	err := r.proc.Stop(45 * time.Second)
	if errors.Is(err, os.ErrProcessDone) {
		p.hadExited(r)
	}
	<-r.done
	if err != nil {
		return fmt.Errorf("stopping the operator: %w", err)
	}
	if err := r.proc.Err(); err != nil {
		return fmt.Errorf("the operator exited with %w", err)
	}
	return nil
}
