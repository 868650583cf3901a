package realnode

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// stopTimeout is how long a process gets after SIGTERM before SIGKILL.
const stopTimeout = 10 * time.Second

// process is a daemon of the node: containerd or the kubelet.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startProcess starts binary with args, its output in logs/<name>.log. The
// kernel kills it when the test process dies.
func (n *Node) startProcess(name string, env []string, binary string, args ...string) error {
	log, err := os.OpenFile(filepath.Join(n.LogDir(), name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &process{name: name, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	n.procs = append(n.procs, p)
	return nil
}

func (p *process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, then SIGKILL after stopTimeout, and waits.
func (p *process) stop() error {
	if p.done() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return nil
}
