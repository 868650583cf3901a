package simsuite

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// ManagerOptions say how to run the manager binary out of cluster.
type ManagerOptions struct {
	// Binary is the manager (Env.Manager); Dir is the project's directory
	// it runs from, for watches.yaml and helm-charts/.
	Binary, Dir string
	// Kubeconfig is the cluster it runs against.
	Kubeconfig string
	// LogPath is the file its output is appended to, after a line that
	// names it (Name) and its pid.
	LogPath, Name string
	// Env is added to the test's environment after KUBECONFIG.
	Env []string
	// Args are its flags.
	Args []string
}

// Manager is one process of the manager binary. It is killed if the test
// process dies.
type Manager struct {
	Cmd *exec.Cmd
	// Log is the process's log, open for the suite's own markers; the
	// caller closes it once the process is gone.
	Log    *os.File
	exited chan struct{}
	err    error
}

// StartManager starts the manager binary as o says.
func StartManager(o ManagerOptions) (*Manager, error) {
	log, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", o.Name, err)
	}
	cmd := exec.Command(o.Binary, o.Args...)
	cmd.Dir = o.Dir
	cmd.Env = append(append(os.Environ(), "KUBECONFIG="+o.Kubeconfig), o.Env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", o.Name, err)
	}
	_, _ = fmt.Fprintf(log, "==== %s started, pid %d ====\n", o.Name, cmd.Process.Pid)
	m := &Manager{Cmd: cmd, Log: log, exited: make(chan struct{})}
	go func() {
		m.err = cmd.Wait()
		close(m.exited)
	}()
	return m, nil
}

// Pid is the process's ID.
func (m *Manager) Pid() int { return m.Cmd.Process.Pid }

// Exited is closed once the process has exited and been waited for.
func (m *Manager) Exited() <-chan struct{} { return m.exited }

// Err is how the process exited (nil for status 0); read it after Exited.
func (m *Manager) Err() error {
	<-m.exited
	return m.err
}

// Running reports whether the process has not exited.
func (m *Manager) Running() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Kill SIGKILLs the process and returns once it is gone.
func (m *Manager) Kill() {
	_ = m.Cmd.Process.Kill()
	<-m.exited
}

// Stop sends SIGTERM and waits up to timeout for the process to exit,
// then kills it. The error of the signal is returned as it is
// (os.ErrProcessDone when the process had already exited).
func (m *Manager) Stop(timeout time.Duration) error {
	if err := m.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-m.exited:
		return nil
	case <-time.After(timeout):
		m.Kill()
		return fmt.Errorf("did not stop within %s of SIGTERM", timeout)
	}
}
