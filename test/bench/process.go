//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

const (
	// stopTimeout is how long an operator gets to exit after SIGTERM.
	stopTimeout = 45 * time.Second
	// pollPeriod is how often readiness and counters are polled where
	// their timing is measured.
	pollPeriod = 50 * time.Millisecond
)

// processSpec describes an operator process to run.
type processSpec struct {
	binary string
	args   []string
	env    []string // added to the benchmark's environment
	dir    string
	// logPath receives stdout and stderr, appended across restarts.
	logPath string
	// readyURL answers 200 once the process is ready; metricsURL serves
	// its Prometheus metrics.
	readyURL, metricsURL string
	// pprofURL is the base URL of the pprof endpoints; empty when off.
	pprofURL string
}

// operatorProcess is a running operator.
type operatorProcess struct {
	spec    processSpec
	cmd     *exec.Cmd
	log     *os.File
	started time.Time
	// readyAfter is the time from start to the first 200 of readyURL.
	readyAfter time.Duration
	done       chan struct{}
	waitErr    error
	metrics    *metricsEndpoint
}

// startProcess starts the process in its own process group, killed by the
// kernel should the benchmark die first.
func startProcess(spec processSpec) (*operatorProcess, error) {
	log, err := os.OpenFile(spec.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the operator log: %w", err)
	}
	cmd := exec.Command(spec.binary, spec.args...)
	cmd.Dir = spec.dir
	cmd.Env = append(os.Environ(), spec.env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &operatorProcess{spec: spec, cmd: cmd, log: log, done: make(chan struct{}), metrics: newMetricsEndpoint(spec.metricsURL)}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("starting %s: %w", spec.binary, err)
	}
	_, _ = fmt.Fprintf(log, "==== started pid %d: %s %v ====\n", cmd.Process.Pid, spec.binary, spec.args)
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// pid is the process id.
func (p *operatorProcess) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *operatorProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes how the process ended.
func (p *operatorProcess) exitError() error {
	if p.waitErr == nil {
		return fmt.Errorf("the operator exited early with status 0; see %s", p.spec.logPath)
	}
	return fmt.Errorf("the operator exited early: %w; see %s", p.waitErr, p.spec.logPath)
}

// waitReady polls the readiness URL until it answers 200 and records the
// time since the process started.
func (p *operatorProcess) waitReady(ctx context.Context) error {
	client := &http.Client{Timeout: time.Second}
	err := poll(ctx, pollPeriod, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, p.exitError()
		}
		return httpOK(ctx, client, p.spec.readyURL), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", p.spec.readyURL, err)
	}
	p.readyAfter = time.Since(p.started)
	return nil
}

// stop sends SIGTERM and waits for the process to exit, killing its process
// group after stopTimeout.
func (p *operatorProcess) stop() error {
	defer func() { _ = p.log.Close() }()
	if p.exited() {
		return p.cleanExit()
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signalling the operator: %w", err)
	}
	select {
	case <-p.done:
		return p.cleanExit()
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("the operator did not stop within %s of SIGTERM", stopTimeout)
	}
}

// cleanExit is nil when the process exited with status 0.
func (p *operatorProcess) cleanExit() error {
	if p.waitErr != nil {
		return fmt.Errorf("the operator exited with %w; see %s", p.waitErr, p.spec.logPath)
	}
	return nil
}

// poll calls cond every period until it returns true or an error, or ctx ends.
func poll(ctx context.Context, period time.Duration, cond func(context.Context) (bool, error)) error {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// httpOK reports whether a GET of url answers 200.
func httpOK(ctx context.Context, client *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// metricsEndpoint is an operator's plain-HTTP Prometheus endpoint.
type metricsEndpoint struct {
	url    string
	client *http.Client
}

func newMetricsEndpoint(url string) *metricsEndpoint {
	return &metricsEndpoint{url: url, client: &http.Client{Timeout: 10 * time.Second}}
}

// scrape fetches and parses the metrics.
func (m *metricsEndpoint) scrape(ctx context.Context) (metricFamilies, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := m.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scraping %s: %w", m.url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scraping %s: %s", m.url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// freeAddr returns 127.0.0.1:<port> of a port free at the time of the call.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// freeAddrs returns n distinct free addresses.
func freeAddrs(n int) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}
