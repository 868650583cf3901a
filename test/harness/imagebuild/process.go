package imagebuild

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// stopTimeout is how long a daemon gets after SIGTERM before SIGKILL.
const stopTimeout = 15 * time.Second

// daemon is a process an Env runs: the registry or buildkitd.
type daemon struct {
	name    string
	log     string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// startDaemon starts binary with args and env, its output appended to log.
// The kernel kills it when the process that started it dies.
func startDaemon(name, log string, env []string, binary string, args ...string) (*daemon, error) {
	out, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer func() { _ = out.Close() }()
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &daemon{name: name, log: log, cmd: cmd, exited: make(chan struct{})}
	go func() {
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// done reports whether the daemon has exited.
func (d *daemon) done() bool {
	select {
	case <-d.exited:
		return true
	default:
		return false
	}
}

// exitError says that the daemon exited, with the tail of its log.
func (d *daemon) exitError() error {
	return fmt.Errorf("%s exited (%w): %s", d.name, d.waitErr, logTail(d.log))
}

// stop sends SIGTERM, then SIGKILL after stopTimeout, and waits.
func (d *daemon) stop() error {
	if d == nil || d.done() {
		return nil
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stopping %s: %w", d.name, err)
	}
	select {
	case <-d.exited:
	case <-time.After(stopTimeout):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	return nil
}

// logTail is the end of a log file, for error messages.
func logTail(file string) string {
	const tail = 4 << 10
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	if st, err := f.Stat(); err == nil && st.Size() > tail {
		_, _ = f.Seek(-tail, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
