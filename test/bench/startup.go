//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
)

const (
	// echoController is the controller-runtime name of echo-operator's
	// Helm reconciler for Echo.
	echoController = "echo-controller"
	// reconcilePollPeriod is how often the reconcile counter is read during
	// the startup; a scrape costs the operator some CPU.
	reconcilePollPeriod = 200 * time.Millisecond
)

// startup restarts echo-operator on N converged Echos and checks that it
// catches up without reinstalling or upgrading any release.
func (r *run) startup(ctx context.Context) error {
	if u, ok := r.stopOperator(); ok {
		r.res.Process.Total = u
	}
	before, err := r.releases(ctx)
	if err != nil {
		return err
	}
	first, err := r.counters(ctx)
	if err != nil {
		return err
	}
	if err := r.startOperator(ctx); err != nil {
		return err
	}
	res := &startupResult{ReadySeconds: r.proc.readyAfter.Seconds(), Releases: len(before)}
	r.res.Startup = res
	waitErr := r.waitReconciles(ctx, res)
	if waitErr == nil {
		r.log.Printf("restarted: ready after %.2fs, %d reconciles after %.2fs", res.ReadySeconds, len(r.names), res.ReconciledSeconds)
		waitErr = sleep(ctx, startupGrace)
	}
	// Measured even after a timeout: what happened so far is worth reporting.
	ctx = context.WithoutCancel(ctx)
	last, err := r.counters(ctx)
	if err != nil {
		return err
	}
	res.processWindow = r.processWindow(first, last)
	after, err := r.releases(ctx)
	if err != nil {
		return err
	}
	res.ReleaseChanges = diffReleases(before, after)
	res.ReleasesUnchanged = len(res.ReleaseChanges) == 0
	r.log.Printf("restart: %d release Secrets changed, %.0f Secret and %.0f Deployment writes",
		len(res.ReleaseChanges), res.SecretWrites, res.DeploymentWrites)
	return waitErr
}

// waitReconciles polls the operator's reconcile counter until the Echo
// controller has reconciled N times.
func (r *run) waitReconciles(ctx context.Context, res *startupResult) error {
	var at time.Time
	err := poll(ctx, reconcilePollPeriod, func(ctx context.Context) (bool, error) {
		if r.proc.exited() {
			return false, r.proc.exitError()
		}
		m, err := r.proc.metrics.scrape(ctx)
		if err != nil {
			return false, nil // not serving yet
		}
		at = time.Now()
		res.Reconciles = m.sum(reconcileTotalMetric, map[string]string{"controller": echoController})
		return res.Reconciles >= float64(len(r.names)), nil
	})
	res.ReconciledSeconds = at.Sub(r.proc.started).Seconds()
	res.TimedOut = err != nil
	if err != nil {
		return fmt.Errorf("waiting for %d reconciles (%.0f so far): %w", len(r.names), res.Reconciles, err)
	}
	return nil
}

// objectWritesTo selects the writes to objects of a resource: their status
// subresource is left out, which the cluster's controllers write.
func objectWritesTo(resource string) func(requestKey) bool {
	return func(k requestKey) bool {
		return k.Resource == resource && k.Subresource != "status" && k.isWrite()
	}
}

// releaseSecret is what identifies a stored revision of a Helm release.
type releaseSecret struct {
	Version, Status, ResourceVersion, Fingerprint string
}

// releases lists the release Secrets of the bench namespace, by name.
func (r *run) releases(ctx context.Context) (map[string]releaseSecret, error) {
	list, err := r.cluster.clientset.CoreV1().Secrets(benchNamespace).List(ctx, metav1.ListOptions{LabelSelector: chart.ReleaseRecordSelector().String()})
	if err != nil {
		return nil, fmt.Errorf("listing the release Secrets: %w", err)
	}
	out := make(map[string]releaseSecret, len(list.Items))
	for _, s := range list.Items {
		out[s.Name] = releaseSecret{Version: s.Labels["version"], Status: s.Labels["status"], ResourceVersion: s.ResourceVersion,
			Fingerprint: s.Labels[releaserecords.FingerprintLabel]}
	}
	return out, nil
}

// diffReleases describes the release Secrets added, removed or changed
// from before to after, sorted.
func diffReleases(before, after map[string]releaseSecret) []string {
	var out []string
	for name, b := range before {
		a, ok := after[name]
		switch {
		case !ok:
			out = append(out, "removed "+name)
		case a != b:
			out = append(out, fmt.Sprintf("changed %s: version %s status %s rv %s -> version %s status %s rv %s",
				name, b.Version, b.Status, b.ResourceVersion, a.Version, a.Status, a.ResourceVersion))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			out = append(out, "added "+name)
		}
	}
	slices.Sort(out)
	return out
}

// forEach calls fn for every name from workers goroutines and returns when
// each successful call started. It stops at the first error.
func forEach(ctx context.Context, names []string, workers int, fn func(context.Context, string) error) (map[string]time.Time, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu      sync.Mutex
		started = make(map[string]time.Time, len(names))
		work    = make(chan string)
		wg      sync.WaitGroup
	)
	for range min(workers, len(names)) {
		wg.Go(func() {
			for name := range work {
				at := time.Now()
				if err := fn(ctx, name); err != nil {
					cancel(err)
					continue
				}
				mu.Lock()
				started[name] = at
				mu.Unlock()
			}
		})
	}
feed:
	for _, name := range names {
		select {
		case work <- name:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return started, context.Cause(ctx)
}

// saveHeapProfile saves the operator's heap profile, when pprof is on, as
// <system>-n<N>-heap-<label>.pb.gz in the pprof directory. A failure is
// only logged: profiles are a diagnostic aid.
func (r *run) saveHeapProfile(ctx context.Context, label string) {
	if r.proc == nil || r.proc.spec.pprofURL == "" {
		return
	}
	path := filepath.Join(r.env.pprofDir, fmt.Sprintf("%s-n%d-heap-%s.pb.gz", r.res.System, r.res.N, label))
	if err := download(ctx, r.proc.spec.pprofURL+"/heap", path); err != nil {
		r.log.Printf("saving the heap profile: %v", err)
		return
	}
	r.log.Printf("heap profile: %s", path)
}

// download writes the body of a GET of url to path.
func download(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
