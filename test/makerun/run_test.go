package makerun

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopWait bounds the teardown after Ctrl-C: the operator, the forward,
// the node's containers, its network and the control plane.
const stopWait = 3 * time.Minute

// current is the run the test started, which tearDown stops when a test
// failed halfway.
var current *makeRun

// makeRun is hack/run.sh started as `make run` starts it, leading a
// process group in a session of its own, as a terminal's job.
type makeRun struct {
	cmd    *exec.Cmd
	runDir string
	exited chan struct{}

	mu     sync.Mutex
	output []string
	added  chan struct{} // closed and replaced at each line
}

// startMakeRun starts hack/run.sh with the environment `make run` gives
// it (make test's), its state in runDir, no reachable cluster configured,
// and the sample Echo forwarded to port.
func startMakeRun(runDir string, port int) (*makeRun, error) {
	log, err := os.Create(filepath.Join(workDir, "make-run.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("bash", "hack/run.sh")
	cmd.Dir = repoRoot
	cmd.Env = append(withoutKubeconfig(os.Environ()),
		"KUBECONFIG="+filepath.Join(workDir, "no-kubeconfig"), // no cluster reachable: a local one
		"RUN_DIR="+runDir, fmt.Sprintf("ECHO_PORT=%d", port))
	// A group and a session of its own, as a terminal's job; SIGINT to the
	// script if the test dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGINT}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := &makeRun{cmd: cmd, runDir: runDir, exited: make(chan struct{}), added: make(chan struct{})}
	current = r
	go func() {
		r.read(io.TeeReader(out, log))
		_ = cmd.Wait()
		_ = log.Close()
		close(r.exited)
	}()
	return r, nil
}

func withoutKubeconfig(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "RUN_DIR=") && !strings.HasPrefix(kv, "ECHO_PORT=") {
			out = append(out, kv)
		}
	}
	return out
}

// read keeps every line of the run's output.
func (r *makeRun) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		r.mu.Lock()
		r.output = append(r.output, sc.Text())
		close(r.added)
		r.added = make(chan struct{})
		r.mu.Unlock()
	}
}

// waitForLine waits for a line of output that contains want and returns
// it, with the lines before it.
func (r *makeRun) waitForLine(want string, timeout time.Duration) (line string, before []string, err error) {
	deadline := time.After(timeout)
	seen := 0
	for {
		r.mu.Lock()
		lines, added := r.output, r.added
		r.mu.Unlock()
		for i := seen; i < len(lines); i++ {
			if strings.Contains(lines[i], want) {
				return lines[i], lines[:i], nil
			}
		}
		seen = len(lines)
		select {
		case <-added:
		case <-r.exited:
			r.mu.Lock()
			done := len(r.output) == seen
			r.mu.Unlock()
			if done {
				return "", nil, fmt.Errorf("make run exited (%s) before printing %q; its output ends with:\n%s", r.cmd.ProcessState, want, r.tail(40))
			}
		case <-deadline:
			return "", nil, fmt.Errorf("make run did not print %q within %s; its output ends with:\n%s", want, timeout, r.tail(40))
		}
	}
}

// tail is the last n lines of output.
func (r *makeRun) tail(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.output[max(0, len(r.output)-n):], "\n")
}

// pgid is the run's process group, and its session.
func (r *makeRun) pgid() int { return r.cmd.Process.Pid }

// interrupt sends SIGINT to the whole group, as a terminal's Ctrl-C does,
// and waits for the script to exit; past stopWait it kills the group, and
// says so.
func (r *makeRun) interrupt() error {
	select {
	case <-r.exited:
		return nil
	default:
	}
	if err := syscall.Kill(-r.pgid(), syscall.SIGINT); err != nil {
		return fmt.Errorf("sending SIGINT to the group: %w", err)
	}
	select {
	case <-r.exited:
		return nil
	case <-time.After(stopWait):
		_ = syscall.Kill(-r.pgid(), syscall.SIGKILL)
		<-r.exited
		return fmt.Errorf("make run did not stop within %s of Ctrl-C: killed; its output ends with:\n%s", stopWait, r.tail(20))
	}
}
