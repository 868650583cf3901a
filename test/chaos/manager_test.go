//go:build linux

package chaos

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/simsuite"
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
	proc     *simsuite.Manager
	restarts int
}

// Start runs a new manager process.
func (m *managerProcess) Start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		return errors.New("the manager is already running")
	}
	proc, err := simsuite.StartManager(simsuite.ManagerOptions{
		Binary: managerBinary, Dir: repoRoot, Kubeconfig: m.kubeconfig, LogPath: m.logPath, Name: "manager",
		Env: []string{"RELATED_IMAGE_ECHO=" + echoImage, "WATCH_NAMESPACE=" + strings.Join(m.namespaces, ",")},
		Args: []string{
			"--operator-namespace=" + operatorNamespace,
			"--health-probe-bind-address=0",
			"--metrics-bind-address=0",
			"--graceful-shutdown-timeout=5s",
		},
	})
	if err != nil {
		return err
	}
	m.proc = proc
	return nil
}

// Kill SIGKILLs the manager and returns once it is gone.
func (m *managerProcess) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return
	}
	m.proc.Kill()
	_, _ = fmt.Fprintf(m.proc.Log, "==== manager killed, pid %d ====\n", m.proc.Pid())
	_ = m.proc.Log.Close()
	m.proc = nil
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
	return m.proc != nil && !m.proc.Running()
}

// Stop asks the manager to shut down and waits for it.
func (m *managerProcess) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc == nil {
		return nil
	}
	defer func() {
		_ = m.proc.Log.Close()
		m.proc = nil
	}()
	if err := m.proc.Stop(stopTimeout); err != nil {
		return fmt.Errorf("stopping the manager: %w", err)
	}
	return nil
}
