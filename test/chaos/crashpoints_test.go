//go:build linux

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestChaos runs the crash points of every scenario and the random kills,
// against one S3 service.
func TestChaos(t *testing.T) {
	env := startS3(t)
	t.Run("crash points", func(t *testing.T) {
		for _, sc := range scenarios() {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				crashPoints(t, env, sc)
			})
		}
	})
	t.Run("random kills", func(t *testing.T) { randomKills(t, env) })
}

// fullyCoveredInFastRun are the scenarios whose every kill point the fast
// run tries; it tries one kill point, the middle write, of the others.
var fullyCoveredInFastRun = map[string]bool{"install": true, "upgrade": true}

// crashPoints records the writes of a scenario, then kills the manager at
// each of them in turn (in parallel subtests, each in its own namespace).
func crashPoints(t *testing.T, env *s3Env, sc scenario) {
	rec := runScenario(t, env, sc, 0)
	writes := len(rec.writes)
	t.Logf("recording run: %d writes to converge in %s:\n  %s", writes, rec.took.Round(time.Millisecond), strings.Join(rec.writes, "\n  "))
	if writes == 0 {
		t.Fatalf("scenario %s made no write", sc.name)
	}
	book.recorded(sc.name, writes)
	for _, k := range killPoints(sc.name, writes) {
		t.Run(fmt.Sprintf("kill after write %d of %d", k, writes), func(t *testing.T) {
			t.Parallel()
			runScenario(t, env, sc, k)
		})
	}
}

// killPoints are the writes after which the manager is killed.
func killPoints(name string, writes int) []int {
	if !fullRun && !fullyCoveredInFastRun[name] {
		return []int{(writes + 1) / 2}
	}
	points := make([]int, writes)
	for i := range points {
		points[i] = i + 1
	}
	return points
}

// outcome is what one run of a scenario came to.
type outcome struct {
	// writes are the counted writes, up to convergence or the kill.
	writes []string
	// killed says whether the kill point was reached.
	killed bool
	// failed says the run did not converge.
	failed bool
	// took is the time from the restart (or, without a kill, from the
	// action) to convergence.
	took time.Duration
}

// runScenario runs a scenario in a new namespace under a manager of its
// own, killing the manager right after the killAt-th write (never when
// killAt is 0) and restarting it, and fails the test unless everything
// converges within convergeTimeout of the restart.
func runScenario(t *testing.T, env *s3Env, sc scenario, killAt int) outcome {
	t.Helper()
	settled := false
	defer func() {
		if killAt > 0 && !settled {
			book.add(sc.name, outcome{killed: true, failed: true})
		}
	}()
	ns, proxy, mgr := startInNamespace(t, env, sc.name)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout+convergeTimeout)
	defer cancel()

	r := &run{ns: ns, env: env}
	if sc.setup != nil {
		if err := sc.setup(ctx, r); err != nil {
			t.Fatalf("preparing %s: %v", sc.name, err)
		}
	}
	restarts := &restartLog{}
	proxy.Arm(killAt, func() {
		mgr.Kill()
		proxy.Resume()
		restarts.add(mgr.Start())
	})
	r.actStart = time.Now()
	if err := sc.act(ctx, r); err != nil {
		t.Fatalf("%s: %v", sc.name, err)
	}
	o := awaitConvergence(t, ctx, sc, r, proxy, mgr, restarts)
	settled = true
	if killAt > 0 {
		book.add(sc.name, o)
		if o.killed {
			t.Logf("killed after write %d (%s); converged %s after the restart", killAt, proxy.Victim(), o.took.Round(time.Millisecond))
		} else {
			t.Logf("kill point %d not reached: the scenario converged after %d writes", killAt, len(o.writes))
		}
	}
	return o
}

// startInNamespace creates a fresh namespace for what, a kill proxy that
// counts the writes to it, and a manager of that namespace behind the
// proxy; all go when the test ends.
func startInNamespace(t *testing.T, env *s3Env, what string) (string, *killProxy, *managerProcess) {
	t.Helper()
	ns := newNamespace(t, env, what)
	proxy, err := newKillProxy(cfg, ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	mgr, err := startManager(t, proxy, ns)
	if err != nil {
		t.Fatal(err)
	}
	return ns, proxy, mgr
}

// startManager starts a manager of namespace ns that reaches the API
// server through the proxy, and stops it when the test ends.
func startManager(t *testing.T, proxy *killProxy, ns string) (*managerProcess, error) {
	kubeconfig, err := proxy.WriteKubeconfig(filepath.Join(workDir, "kubeconfigs", ns))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(logPath(ns)), 0o700); err != nil {
		return nil, err
	}
	mgr := &managerProcess{kubeconfig: kubeconfig, namespaces: []string{ns}, logPath: logPath(ns)}
	if err := mgr.Start(); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := mgr.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("manager log %s, last lines:\n%s", logPath(ns), logTail(logPath(ns), 12000))
		}
	})
	return mgr, nil
}

// restartLog records when the manager was restarted after a kill.
type restartLog struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

func (l *restartLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.at, l.err = time.Now(), err
}

func (l *restartLog) last() (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at, l.err
}

// awaitConvergence polls the scenario's checks until they hold, for at
// most convergeTimeout after the action or, once the manager was killed,
// after its restart. A kill that comes after the checks first held is
// waited for, and the checks must hold again after it.
func awaitConvergence(t *testing.T, ctx context.Context, sc scenario, r *run, proxy *killProxy, mgr *managerProcess, restarts *restartLog) outcome {
	t.Helper()
	start := time.Now()
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var last error
	for {
		restartAt, restartErr := restarts.last()
		if restartErr != nil {
			t.Fatalf("restarting the manager: %v", restartErr)
		}
		if !restartAt.IsZero() {
			start = restartAt
		}
		if mgr.Exited() {
			t.Fatalf("the manager exited by itself")
		}
		err := sc.converged(ctx, r)
		if err != nil && (last == nil || err.Error() != last.Error()) {
			t.Logf("%.1fs: not converged: %v", time.Since(r.actStart).Seconds(), err)
		}
		if last = err; last == nil {
			writes := proxy.Writes()
			fired := proxy.Disarm()
			if !fired || !restartAt.IsZero() {
				return outcome{writes: writes, killed: fired, took: time.Since(start)}
			}
			// The kill came after the checks held: wait for the
			// restart, then for the checks to hold again.
		}
		if time.Since(start) > convergeTimeout {
			t.Fatalf("%s did not converge within %s: %v", sc.name, convergeTimeout, last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not converge: %v: %v", sc.name, ctx.Err(), last)
		case <-ticker.C:
		}
	}
}
