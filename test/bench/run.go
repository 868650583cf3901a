//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

const (
	// settle is the pause between convergence and the idle window, for the
	// last status writes and events to land.
	settle = 15 * time.Second
	// startupGrace extends the startup window past N reconciles, to catch
	// writes that follow them.
	startupGrace = 5 * time.Second
	// topRows is the length of the request breakdowns.
	topRows = 12
)

// run is one system at one N on a cluster of its own.
type run struct {
	env   *environment
	res   *runResult
	dir   string
	names []string
	log   *log.Logger

	cluster     *benchCluster
	sys         system
	stopInform  chan struct{}
	deployments *tracker
	// deploymentInformer feeds deployments, and the upgrades' rollout
	// counts.
	deploymentInformer cache.SharedIndexInformer
	echoes             *tracker // echo only
	proc               *operatorProcess
	sampler            *sampler
	// baselineRate is the cluster's own requests per second.
	baselineRate requestCounts
}

// step is a phase of a run. Its time limit is the -timeout flag plus what
// the phase spends waiting on purpose.
type step struct {
	name  string
	extra time.Duration
	fn    func(context.Context) error
}

// runOne runs system at n and returns what was measured, also when the
// run stopped early.
func runOne(ctx context.Context, env *environment, system string, n int) *runResult {
	r := &run{
		env:   env,
		res:   &runResult{System: system, N: n, Nodes: nodesFor(n), Started: time.Now()},
		dir:   filepath.Join(env.workRoot, fmt.Sprintf("%s-n%d", system, n)),
		names: echoNames(n),
		log:   log.New(os.Stderr, fmt.Sprintf("[%s n=%d] ", system, n), log.Ltime|log.Lmsgprefix),
	}
	if err := r.execute(ctx); err != nil {
		r.res.Error = err.Error()
		r.log.Printf("run failed: %v", err)
	}
	r.teardown()
	r.res.Seconds = time.Since(r.res.Started).Seconds()
	return r.res
}

// echoNames are the names of the n Echos.
func echoNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("echo-%05d", i)
	}
	return names
}

func (r *run) steps() []step {
	steps := []step{
		{"cluster", 0, r.startCluster},
		{"prepare", 0, r.prepare},
		{"baseline", r.env.opts.baseline, r.measureBaseline},
		{"launch", 0, r.launch},
		{"rollout", 0, r.rollout},
		{"idle", settle + r.env.opts.idle, r.idle},
	}
	if r.env.opts.update {
		steps = append(steps, step{"update", 0, r.update})
	}
	if r.res.System == systemEcho && r.env.opts.startup {
		steps = append(steps, step{"startup", startupGrace, r.startup})
	}
	if r.res.System == systemEcho && r.env.opts.upgrade {
		steps = append(steps, step{"upgrade-same-chart", startupGrace, r.upgradeSame}, step{"upgrade-changed-chart", startupGrace, r.upgradeChanged})
	}
	return steps
}

// execute runs the steps in order, stopping at the first failure.
func (r *run) execute(ctx context.Context) error {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("creating the run directory: %w", err)
	}
	for _, s := range r.steps() {
		r.log.Printf("%s", s.name)
		sctx, cancel := context.WithTimeout(ctx, r.env.opts.timeout+s.extra)
		err := s.fn(sctx)
		timedOut := errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
		cancel()
		if err != nil {
			if timedOut {
				r.res.TimedOutPhase = s.name
			}
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

func (r *run) startCluster(ctx context.Context) error {
	c, err := startCluster(ctx, r.env.bins, r.env.crdPaths, len(r.names), filepath.Join(r.dir, "cluster"))
	if err != nil {
		return err
	}
	r.cluster = c
	if r.sys, err = newSystem(r.res.System, r.env, c, r.dir); err != nil {
		return err
	}
	return nil
}

// prepare starts the informers the convergence is read from, before the
// baseline so that their own requests are part of it, and lets the system
// prepare.
func (r *run) prepare(ctx context.Context) error {
	r.stopInform = make(chan struct{})
	deps := informers.NewSharedInformerFactoryWithOptions(r.cluster.clientset, 0, informers.WithNamespace(benchNamespace))
	var err error
	r.deploymentInformer = deps.Apps().V1().Deployments().Informer()
	if r.deployments, err = newTracker(r.deploymentInformer); err != nil {
		return fmt.Errorf("watching Deployments: %w", err)
	}
	deps.Start(r.stopInform)
	synced := []cache.InformerSynced{deps.Apps().V1().Deployments().Informer().HasSynced}
	if r.res.System == systemEcho {
		dyn := dynamicinformer.NewFilteredDynamicSharedInformerFactory(r.cluster.dynamic, 0, benchNamespace, nil)
		inf := dyn.ForResource(echoGVR).Informer()
		if r.echoes, err = newTracker(inf); err != nil {
			return fmt.Errorf("watching Echos: %w", err)
		}
		dyn.Start(r.stopInform)
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("syncing the informers: %w", ctx.Err())
	}
	return r.sys.prepare(ctx, r.names)
}

// measureBaseline measures the cluster's own request rate.
func (r *run) measureBaseline(ctx context.Context) error {
	before, err := r.cluster.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := sleep(ctx, r.env.opts.baseline); err != nil {
		return err
	}
	after, err := r.cluster.apiserverRequests(ctx)
	if err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	r.baselineRate = after.sub(before).scale(1 / secs)
	perMinute := r.baselineRate.scale(60)
	r.res.Baseline = &baselineResult{Seconds: secs, PerMinute: perMinute.total(nil), Rows: rows(perMinute, nil, topRows)}
	r.log.Printf("baseline: %.0f requests/min", r.res.Baseline.PerMinute)
	return nil
}

// launch starts the operator, if the system has one, and its sampler.
func (r *run) launch(ctx context.Context) error {
	if err := r.startOperator(ctx); err != nil || r.proc == nil {
		return err
	}
	r.res.OperatorReadySeconds = r.proc.readyAfter.Seconds()
	r.res.Process = &processResult{PID: r.proc.pid()}
	r.log.Printf("operator pid %d ready after %.2fs", r.proc.pid(), r.proc.readyAfter.Seconds())
	return nil
}

// startOperator starts the system's operator, if any, and samples it.
func (r *run) startOperator(ctx context.Context) error {
	p, err := r.sys.launch(ctx)
	if err != nil || p == nil {
		return err
	}
	r.proc = p
	r.sampler = startSampler(context.Background(), p.pid(), p.metrics)
	return nil
}

// rollout creates the N Echos (or objects) at once and waits for every
// Deployment to be Available.
func (r *run) rollout(ctx context.Context) error {
	r.deployments.arm(r.names, func(o any) bool { return deploymentRolledOut(o, initialMessage) })
	if r.echoes != nil {
		r.echoes.arm(r.names, func(o any) bool { return echoReady(o, 1) })
	}
	res, err := r.converge(ctx, r.sys.create)
	if res != nil {
		r.res.Rollout, r.res.RolloutRequests = res.deployments, res.requests
		r.res.EchoReady = res.echoes
		r.recordUsage(func(p *processResult, u usage) { p.Rollout = u }, res.start, res.end)
		r.saveHeapProfile(ctx, "rollout")
	}
	return err
}

// update patches every Echo (or Deployment) at once and waits for every
// Deployment to roll out the new message.
func (r *run) update(ctx context.Context) error {
	r.deployments.arm(r.names, func(o any) bool { return deploymentRolledOut(o, updatedMessage) })
	if r.echoes != nil {
		r.echoes.arm(r.names, func(o any) bool { return echoReady(o, 2) })
	}
	res, err := r.converge(ctx, r.sys.update)
	if res != nil {
		r.res.Update, r.res.UpdateRequests = res.deployments, res.requests
		r.res.UpdateEchoReady = res.echoes
		r.recordUsage(func(p *processResult, u usage) { p.Update = u }, res.start, res.end)
	}
	return err
}

// converged is what converge measured.
type converged struct {
	start, end  time.Time
	deployments *convergence
	echoes      *convergence
	requests    *requestWindow
}

// converge runs action for every name from parallel workers, then waits
// for the armed trackers. The request window closes when the Deployments
// have converged; the wait for the Echos' Ready conditions follows. When
// the actions or the wait fail, what was reached is still returned.
func (r *run) converge(ctx context.Context, action func(context.Context, string) error) (*converged, error) {
	before, err := r.counters(ctx)
	if err != nil {
		return nil, err
	}
	res := &converged{start: time.Now()}
	actions, err := forEach(ctx, r.names, clientWorkers, action)
	r.log.Printf("%d actions sent in %.2fs", len(actions), time.Since(res.start).Seconds())
	reached := r.deployments.snapshot()
	if err == nil {
		reached, err = r.deployments.wait(ctx)
	}
	res.end = time.Now()
	res.deployments = r.summarize(actions, reached, res.end, err)
	r.log.Printf("%d/%d Deployments converged: all %.2fs, p50 %.2fs, p99 %.2fs",
		res.deployments.Reached, res.deployments.Want, res.deployments.AllSeconds, res.deployments.P50Seconds, res.deployments.P99Seconds)
	after, cerr := r.counters(context.WithoutCancel(ctx))
	if cerr != nil {
		return res, errors.Join(err, cerr)
	}
	res.requests = r.requestWindow(before, after)
	if err != nil || r.echoes == nil {
		return res, err
	}
	ready, err := r.echoes.wait(ctx)
	res.echoes = r.summarize(actions, ready, time.Now(), err)
	r.log.Printf("%d/%d Echos Ready: all %.2fs", res.echoes.Reached, res.echoes.Want, res.echoes.AllSeconds)
	return res, err
}

// summarize is the convergence of the run's objects; err is why the wait
// ended early, if it did.
func (r *run) summarize(actions, reached map[string]time.Time, end time.Time, err error) *convergence {
	c := summarize(len(r.names), actions, reached, end)
	c.TimedOut = errors.Is(err, context.DeadlineExceeded)
	return c
}

// idle waits for the cluster to settle, then counts requests minute by
// minute.
func (r *run) idle(ctx context.Context) error {
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	first, err := r.counters(ctx)
	if err != nil {
		return err
	}
	res := &idleResult{BaselinePerMinute: r.baselineRate.total(nil) * 60}
	end := first.at.Add(r.env.opts.idle)
	prev := first
	// One window per minute, on boundaries counted from the start so that
	// scrape times do not accumulate; the last one ends with the idle time.
	for k := 1; prev.at.Before(end); k++ {
		boundary := first.at.Add(time.Duration(k) * time.Minute)
		if boundary.After(end) {
			boundary = end
		}
		if err := sleep(ctx, time.Until(boundary)); err != nil {
			return err
		}
		next, err := r.counters(ctx)
		if err != nil {
			return err
		}
		w := r.requestWindow(prev, next)
		perMinute := 60 / w.Seconds
		res.Minutes = append(res.Minutes, w.Total*perMinute)
		res.NetMinutes = append(res.NetMinutes, w.Net*perMinute)
		r.log.Printf("idle: %.0f requests/min (%.0f net of baseline)", w.Total*perMinute, w.Net*perMinute)
		prev = next
	}
	whole := r.requestWindow(first, prev)
	perMinute := 60 / whole.Seconds
	res.Mean, res.NetMean = whole.Total*perMinute, whole.Net*perMinute
	res.ClientPerMinute = whole.ClientTotal * perMinute
	res.Rows = rows(whole.raw.scale(perMinute), whole.base.scale(perMinute), topRows)
	r.res.Idle = res
	r.recordUsage(func(p *processResult, u usage) { p.Idle = u }, first.at, prev.at)
	r.saveHeapProfile(ctx, "idle")
	return nil
}

// counters is a snapshot of the request counters.
type counters struct {
	at     time.Time
	api    requestCounts
	client map[string]float64
	// clientKinds are the operator's own requests by kind, if it counts
	// them.
	clientKinds requestCounts
}

func (r *run) counters(ctx context.Context) (counters, error) {
	c := counters{at: time.Now()}
	var err error
	if c.api, err = r.cluster.apiserverRequests(ctx); err != nil {
		return c, err
	}
	if c.client, err = r.sys.clientRequests(ctx, r.proc); err != nil {
		return c, fmt.Errorf("reading the client's request counts: %w", err)
	}
	if r.proc != nil {
		m, err := r.proc.metrics.scrape(ctx)
		if err != nil {
			return c, fmt.Errorf("reading the operator's request counts: %w", err)
		}
		c.clientKinds = requestsOf(m, operatorRequestsMetric)
	}
	return c, nil
}

// processWindow measures the manager process from its start to the
// snapshot last, against the snapshot first taken at its start.
func (r *run) processWindow(first, last counters) processWindow {
	raw := last.api.sub(first.api)
	return processWindow{
		WindowSeconds:    last.at.Sub(r.proc.started).Seconds(),
		SecretWrites:     raw.total(objectWritesTo("secrets")),
		DeploymentWrites: raw.total(objectWritesTo("deployments")),
		Requests:         r.requestWindow(first, last),
		Process:          r.sampler.window(r.proc.started, last.at),
	}
}

// requestWindow reports the requests between two snapshots.
func (r *run) requestWindow(before, after counters) *requestWindow {
	secs := after.at.Sub(before.at).Seconds()
	raw := after.api.sub(before.api)
	base := r.baselineRate.scale(secs)
	w := &requestWindow{
		raw:       raw,
		base:      base,
		Seconds:   secs,
		Total:     raw.total(nil),
		Baseline:  base.total(nil),
		NetWrites: raw.total(requestKey.isWrite) - base.total(requestKey.isWrite),
		Client:    map[string]float64{},
		Top:       rows(raw, base, topRows),
	}
	w.Net = w.Total - w.Baseline
	if len(after.clientKinds) > 0 {
		w.ClientKinds = rows(after.clientKinds.sub(before.clientKinds), nil, 0)
	}
	for method, v := range after.client {
		if d := v - before.client[method]; d != 0 {
			w.Client[method] = d
			w.ClientTotal += d
		}
	}
	return w
}

// recordUsage stores the operator's usage between from and to, if there
// is an operator.
func (r *run) recordUsage(set func(*processResult, usage), from, to time.Time) {
	if r.sampler == nil {
		return
	}
	set(r.res.Process, r.sampler.window(from, to))
}

// teardown stops the operator, the informers and the cluster.
func (r *run) teardown() {
	// After a restart the process's usage is the startup's, recorded there.
	if u, ok := r.stopOperator(); ok && r.res.Startup == nil && len(r.res.Upgrades) == 0 {
		r.res.Process.Total = u
	}
	if r.stopInform != nil {
		close(r.stopInform)
	}
	if r.cluster != nil {
		if err := r.cluster.Stop(); err != nil {
			r.log.Printf("stopping the cluster: %v", err)
		}
	}
	if r.env.opts.keep || r.res.Error != "" {
		r.res.LogDir = r.dir
	}
}

// stopOperator stops the sampler and the operator, if running, and
// returns the usage over the process's life.
func (r *run) stopOperator() (usage, bool) {
	if r.proc == nil {
		return usage{}, false
	}
	r.sampler.stop()
	u := r.sampler.window(r.proc.started, time.Now())
	if err := r.proc.stop(); err != nil {
		r.log.Printf("stopping the operator: %v", err)
	}
	r.proc, r.sampler = nil, nil
	return u, true
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
