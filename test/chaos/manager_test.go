//go:build linux

package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopTimeout bounds a graceful stop of the manager.
const stopTimeout = 45 * time.Second

// managerProcess is the manager binary run out of cluster, from the
// project's directory, against a kubeconfig, watching the given
// namespaces. Leader election is off: the suite never runs two managers of
// one namespace at once (a kill waits for the process to be gone before
// the next starts), and the Lease's expiry would only add its duration to
// every restart. Start and Kill may be called from any goroutine.
type managerProcess struct {
	kubeconfig string
	namespaces []string
	logPath    string

	mu       sync.Mutex
	cmd      *exec.Cmd
	log      *os.File
	exited   chan struct{}
	restarts int
}

// Start runs a new manager process.
func (m *managerProcess) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		return errors.New("the manager is already running")
	}
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("opening the manager's log: %w", err)
	}
	cmd := exec.Command(managerBinary,
		"--operator-namespace="+operatorNamespace,
		"--health-probe-bind-address=0",
		"--metrics-bind-address=0",
		"--graceful-shutdown-timeout=5s",
	)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+m.kubeconfig, "RELATED_IMAGE_ECHO="+echoImage,
		"WATCH_NAMESPACE="+strings.Join(m.namespaces, ","))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("starting the manager: %w", err)
	}
	_, _ = fmt.Fprintf(log, "==== manager started, pid %d ====\n", cmd.Process.Pid)
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	m.cmd, m.log, m.exited = cmd, log, exited
	return nil
}

// Kill SIGKILLs the manager and returns once it is gone.
func (m *managerProcess) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Kill()
	<-m.exited
	_, _ = fmt.Fprintf(m.log, "==== manager killed, pid %d ====\n", m.cmd.Process.Pid)
	_ = m.log.Close()
	m.cmd, m.log = nil, nil
}

// KillAndRestart SIGKILLs the manager and starts a new one.
func (m *managerProcess) KillAndRestart() error {
	m.Kill()
	m.mu.Lock()
	m.restarts++
	m.mu.Unlock()
	return m.Start()
}

// Exited reports whether the running manager has ended by itself.
func (m *managerProcess) Exited() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return false
	}
	select {
	case <-m.exited:
		return true
	default:
		return false
	}
}

// Stop asks the manager to shut down and waits for it.
func (m *managerProcess) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return nil
	}
	defer func() {
		_ = m.log.Close()
		m.cmd, m.log = nil, nil
	}()
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping the manager: %w", err)
	}
	select {
	case <-m.exited:
		return nil
	case <-time.After(stopTimeout):
		_ = m.cmd.Process.Kill()
		<-m.exited
		return fmt.Errorf("the manager did not stop within %s of SIGTERM", stopTimeout)
	}
}
