package simcluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is one long-running process of the cluster started by this package
// (kube-controller-manager, kube-scheduler, kwok).
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	pidFile string

	done chan struct{} // closed once the process has been waited for
	err  error         // Wait's result, valid after done is closed
}

func (ch *child) exited() bool {
	select {
	case <-ch.done:
		return true
	default:
		return false
	}
}

// exitError describes an early exit together with the end of the log.
func (ch *child) exitError() error {
	status := ch.err
	if status == nil {
		// Wait reports a zero exit status as no error; here that exit is
		// just as unexpected.
		status = errors.New("exit status 0")
	}
	return fmt.Errorf("%s exited unexpectedly (%w); last lines of %s:\n%s",
		ch.name, status, ch.logPath, logTail(ch.logPath, 20))
}

// stop sends SIGTERM to the process group, waits up to timeout, then sends
// SIGKILL and waits for the process to be reaped.
func (ch *child) stop(timeout time.Duration) error {
	if ch.exited() {
		return nil
	}
	pid := ch.cmd.Process.Pid
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-ch.done:
		return nil
	case <-time.After(timeout):
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-ch.done:
		return fmt.Errorf("%s did not stop within %s and was killed", ch.name, timeout)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) survived SIGKILL", ch.name, pid)
	}
}

// starter starts processes from one goroutine locked to its OS thread. On
// Linux, children get a parent-death signal, which the kernel sends when the
// thread that forked them ends, not the whole process; keeping that thread
// alive for the cluster's lifetime makes the signal mean "the parent process
// died".
type starter struct {
	reqs chan startReq
}

type startReq struct {
	cmd  *exec.Cmd
	errc chan error
}

func newStarter() *starter {
	s := &starter{reqs: make(chan startReq)}
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when the loop ends the thread exits with it,
		// which is only done once every child has been stopped.
		for r := range s.reqs {
			r.errc <- r.cmd.Start()
		}
	}()
	return s
}

func (s *starter) start(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	s.reqs <- startReq{cmd: cmd, errc: errc}
	return <-errc
}

func (s *starter) close() { close(s.reqs) }

// reaper is a small shell process that outlives this process: it blocks on a
// pipe from us and, if the pipe closes without a "disarm" line (this process
// died without calling Stop, e.g. a test binary killed by -timeout), kills
// every process whose pid file lies in pidDir and removes the given paths.
// It covers etcd and kube-apiserver, which envtest starts without a
// parent-death signal.
type reaper struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

const reaperScript = `read -r line
[ "$line" = disarm ] && exit 0
for f in "$1"/*.pid; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  [ -n "$pid" ] || continue
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
done
shift
[ $# -gt 0 ] && rm -rf -- "$@"
exit 0
`

func startReaper(pidDir string, remove ...string) (*reaper, error) {
	args := append([]string{"-c", reaperScript, "simcluster-reaper", pidDir}, remove...)
	cmd := exec.Command("/bin/sh", args...)
	// Its own process group, so that a Ctrl-C meant for this process does
	// not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting reaper: %w", err)
	}
	return &reaper{cmd: cmd, stdin: stdin}, nil
}

// disarm tells the reaper that everything was stopped properly.
func (r *reaper) disarm() {
	if r == nil {
		return
	}
	_, _ = io.WriteString(r.stdin, "disarm\n")
	_ = r.stdin.Close()
	_ = r.cmd.Wait()
}

// writePidWrapper writes a shell script that records its pid in pidFile and
// then execs binary, so that the pid of a process started by envtest is
// known.
func writePidWrapper(path, binary, pidFile string) error {
	script := fmt.Sprintf("#!/bin/sh\necho $$ > %s\nexec %s \"$@\"\n", shellQuote(pidFile), shellQuote(binary))
	return os.WriteFile(path, []byte(script), 0o755)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func readPid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// processAlive reports whether pid names a live (non-zombie) process.
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil {
		// Field 3, after the parenthesised command name, is the state.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}

// logTail returns the last n lines of a file.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// lockedWriter serialises writes of several processes to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixWriter writes whole lines, each prefixed, to w.
type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := make([]byte, 0, len(p.prefix)+i+1)
		line = append(append(line, p.prefix...), p.buf[:i+1]...)
		p.buf = p.buf[i+1:]
		if _, err := p.w.Write(line); err != nil {
			return len(b), err
		}
	}
	return len(b), nil
}

var (
	portsMu     sync.Mutex
	portsHanded = map[int]bool{}
)

// freePorts returns n distinct TCP ports that are free on 127.0.0.1 and
// were not handed out before by this process. Another process may still
// take one between now and its use; the window is short.
func freePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var (
		ports     []int
		listeners []net.Listener
	)
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, errors.New("no free ports on 127.0.0.1")
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		listeners = append(listeners, l)
		port := l.Addr().(*net.TCPAddr).Port
		if portsHanded[port] {
			continue
		}
		portsHanded[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}
