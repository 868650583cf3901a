//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// restartDelay is how long the suite waits before it starts an operator
// that exited on its own again, as the kubelet restarts a Deployment's
// container after a backoff.
const restartDelay = time.Second

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
	cmd *exec.Cmd
	log *os.File
	// done is closed once the process has exited and its log is closed.
	done chan struct{}
}

func (p *operatorProcess) start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.startLocked()
}

func (p *operatorProcess) startLocked() error {
	if p.run != nil {
		return fmt.Errorf("the operator already runs, pid %d", p.run.cmd.Process.Pid)
	}
	log, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.binary,
		"--leader-elect",
		"--leader-election-namespace="+operatorNamespace,
		// Short leases, so a killed operator's successor takes over
		// quickly, with room for an API server slowed by the other test
		// packages running beside this one.
		"--leader-elect-lease-duration=8s",
		"--leader-elect-renew-deadline=6s",
		"--leader-elect-retry-period=1s",
		"--health-probe-bind-address=0",
		"--metrics-bind-address="+p.metricsAddr,
		"--metrics-cert-dir="+p.metricsCertDir,
		"--live-api-bind-address="+p.liveAPIAddr,
		"--live-api-cert-dir="+p.liveAPICertDir,
	)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig, "RELATED_IMAGE_ECHO="+echoImage, "WATCH_NAMESPACE=")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting the operator: %w", err)
	}
	_, _ = fmt.Fprintf(log, "==== operator started, pid %d ====\n", cmd.Process.Pid)
	r := &operatorRun{cmd: cmd, log: log, done: make(chan struct{})}
	p.run = r
	go p.watch(r)
	return nil
}

// watch waits for r to exit and, unless it was stopped or killed on
// purpose, records the exit and starts the operator again.
func (p *operatorProcess) watch(r *operatorRun) {
	err := r.cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	asked := p.run != r
	if !asked {
		p.recordExit(r, err)
		p.run = nil
	}
	_ = r.log.Close()
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
	exit := fmt.Sprintf("==== operator pid %d exited on its own: %v ====", r.cmd.Process.Pid, err)
	_, _ = fmt.Fprintln(r.log, exit)
	p.exits = append(p.exits, exit)
}

// pid is the running operator's process ID, 0 when none runs.
func (p *operatorProcess) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.run == nil {
		return 0
	}
	return p.run.cmd.Process.Pid
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

// signal sends sig to a process taken with take. One that had already
// exited on its own, before its watcher noticed, is recorded as such.
func (p *operatorProcess) signal(r *operatorRun, sig os.Signal) error {
	err := r.cmd.Process.Signal(sig)
	if errors.Is(err, os.ErrProcessDone) {
		<-r.done
		p.mu.Lock()
		defer p.mu.Unlock()
		p.exits = append(p.exits, fmt.Sprintf("==== operator pid %d had exited on its own: %v ====", r.cmd.Process.Pid, r.cmd.ProcessState))
	}
	return err
}

// kill ends the operator at once, as an OOM kill or a node loss would.
func (p *operatorProcess) kill() {
	r := p.take()
	if r == nil {
		return
	}
	_ = p.signal(r, os.Kill)
	<-r.done
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
	if err := p.signal(r, syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-r.done:
		if !r.cmd.ProcessState.Success() {
			return fmt.Errorf("the operator exited with %v", r.cmd.ProcessState)
		}
		return nil
	case <-time.After(45 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
		return fmt.Errorf("the operator did not stop within 45s of SIGTERM")
	}
}
