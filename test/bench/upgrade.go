//go:build linux

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/test/harness/upgradechart"
)

const (
	// upgradedVersion is the operator version the upgrades install.
	upgradedVersion = "0.2.0"
	// upgradePollPeriod is how often the release records are listed
	// (metadata only) while an upgrade converges.
	upgradePollPeriod = time.Second
)

// The two upgrades, in the order they run.
const (
	upgradeSameChart    = "same chart"
	upgradeChangedChart = "changed chart"
)

// upgradeSame replaces echo-operator with a new version whose chart
// differs only in its appVersion, as every release's does: no release
// may get a new revision, no Deployment may change.
func (r *run) upgradeSame(ctx context.Context) error {
	return r.upgradeOperator(ctx, upgradeSameChart, upgradechart.Options{AppVersion: upgradedVersion})
}

// upgradeChanged replaces echo-operator with a version whose chart has a
// new version and a pod template change: every release gets one new
// revision (the next after its latest) and every Deployment rolls, at the rate the operator's workers
// allow.
func (r *run) upgradeChanged(ctx context.Context) error {
	return r.upgradeOperator(ctx, upgradeChangedChart,
		upgradechart.Options{AppVersion: upgradedVersion, Version: upgradedVersion, ChangeTemplate: true})
}

// upgradeOperator stops echo-operator, starts it again from the chart o
// describes, waits until every release has converged on it, and records
// what the upgrade cost.
func (r *run) upgradeOperator(ctx context.Context, name string, o upgradechart.Options) error {
	echo, ok := r.sys.(*echoSystem)
	if !ok {
		return fmt.Errorf("only echo-operator is upgraded, not %s", r.res.System)
	}
	watches, err := upgradechart.Write(r.env.repoRoot, filepath.Join(r.dir, "upgrade-"+fmt.Sprint(len(r.res.Upgrades))), o)
	if err != nil {
		return err
	}
	r.stopOperator()
	before, err := r.releases(ctx)
	if err != nil {
		return err
	}
	rollouts := newRolloutCounter(r.deployments.store.List())
	reg, err := r.deploymentInformer.AddEventHandler(rollouts.handler())
	if err != nil {
		return fmt.Errorf("watching the rollouts: %w", err)
	}
	defer func() { _ = r.deploymentInformer.RemoveEventHandler(reg) }()
	first, err := r.counters(ctx)
	if err != nil {
		return err
	}
	echo.watches, echo.version = watches, upgradedVersion
	if err := r.startOperator(ctx); err != nil {
		return err
	}
	res := &upgradeResult{Name: name, Releases: len(before), ReadySeconds: r.proc.readyAfter.Seconds()}
	r.res.Upgrades = append(r.res.Upgrades, res)

	want := func(rel releaseMeta) bool {
		return rel.fingerprint != "" && rel.fingerprint != before[rel.secret].Fingerprint
	}
	if o.ChangeTemplate {
		latest := latestRevisions(before)
		want = func(rel releaseMeta) bool {
			v, err := strconv.Atoi(rel.version)
			return err == nil && v == latest[rel.release]+1 && rel.status == "deployed"
		}
	}
	waitErr := r.waitReleases(ctx, want, rollouts, res)
	if waitErr == nil {
		waitErr = sleep(ctx, startupGrace)
	}
	ctx = context.WithoutCancel(ctx)
	last, err := r.counters(ctx)
	if err != nil {
		return err
	}
	after, err := r.releases(ctx)
	if err != nil {
		return err
	}
	res.processWindow = r.processWindow(first, last)
	res.RevisionsWritten, res.RecordsRewritten = countReleaseChanges(before, after)
	res.Rollouts, res.PeakRollouts = rollouts.counts()
	r.log.Printf("upgrade, %s: %d revisions written, %d records rewritten, %d rollouts (at most %d at once), done after %.2fs",
		name, res.RevisionsWritten, res.RecordsRewritten, res.Rollouts, res.PeakRollouts, res.DoneSeconds)
	return waitErr
}

// waitReleases polls the release records until every release has a record
// that done accepts and no Deployment is rolling, and records when.
func (r *run) waitReleases(ctx context.Context, done func(releaseMeta) bool, rollouts *rolloutCounter, res *upgradeResult) error {
	meta, err := metadata.NewForConfig(r.cluster.config)
	if err != nil {
		return err
	}
	err = poll(ctx, upgradePollPeriod, func(ctx context.Context) (bool, error) {
		if r.proc.exited() {
			return false, r.proc.exitError()
		}
		rels, err := listReleaseMeta(ctx, meta)
		if err != nil {
			return false, nil
		}
		converged := map[string]bool{}
		for _, rel := range rels {
			if done(rel) {
				converged[rel.release] = true
			}
		}
		res.Converged = len(converged)
		return len(converged) == len(r.names) && rollouts.rolling() == 0, nil
	})
	res.DoneSeconds = time.Since(r.proc.started).Seconds()
	res.TimedOut = err != nil
	if err != nil {
		return fmt.Errorf("waiting for %d releases to converge (%d so far): %w", len(r.names), res.Converged, err)
	}
	return nil
}

// latestRevisions are the latest revision of each release of records.
func latestRevisions(records map[string]releaseSecret) map[string]int {
	out := map[string]int{}
	for name, r := range records {
		v, err := strconv.Atoi(r.Version)
		if err != nil {
			continue
		}
		release := strings.TrimSuffix(strings.TrimPrefix(name, "sh.helm.release.v1."), ".v"+r.Version)
		out[release] = max(out[release], v)
	}
	return out
}

// releaseMeta is what the labels of a release record say.
type releaseMeta struct {
	secret, release, version, status, fingerprint string
}

// listReleaseMeta lists the release records of the bench namespace,
// metadata only.
func listReleaseMeta(ctx context.Context, c metadata.Interface) ([]releaseMeta, error) {
	list, err := c.Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(benchNamespace).
		List(ctx, metav1.ListOptions{LabelSelector: chart.ReleaseRecordSelector().String()})
	if err != nil {
		return nil, err
	}
	out := make([]releaseMeta, 0, len(list.Items))
	for _, s := range list.Items {
		l := s.Labels
		out = append(out, releaseMeta{secret: s.Name, release: l[chart.ReleaseNameLabel], version: l[chart.ReleaseVersionLabel],
			status: l[chart.ReleaseStatusLabel], fingerprint: l[releaserecords.FingerprintLabel]})
	}
	return out, nil
}

// countReleaseChanges counts the release records added from before to
// after (new revisions) and those of the same revision rewritten (a
// status or label changed).
func countReleaseChanges(before, after map[string]releaseSecret) (added, rewritten int) {
	for name, a := range after {
		b, ok := before[name]
		switch {
		case !ok:
			added++
		case a.ResourceVersion != b.ResourceVersion:
			rewritten++
		}
	}
	return added, rewritten
}

// rolloutCounter follows, from the Deployments' events, which of them roll
// out a generation newer than the one they had when it was made.
type rolloutCounter struct {
	mu          sync.Mutex
	generations map[string]int64
	rolled      map[string]bool
	inFlight    map[string]bool
	peak        int
}

func newRolloutCounter(objs []any) *rolloutCounter {
	c := &rolloutCounter{generations: map[string]int64{}, rolled: map[string]bool{}, inFlight: map[string]bool{}}
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			c.generations[d.Name] = d.Generation
		}
	}
	return c
}

func (c *rolloutCounter) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.observe,
		UpdateFunc: func(_, obj any) { c.observe(obj) },
	}
}

// observe notes whether a Deployment is rolling out a newer generation.
func (c *rolloutCounter) observe(obj any) {
	d, ok := obj.(*appsv1.Deployment)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen, known := c.generations[d.Name]; known && d.Generation <= gen {
		return
	}
	c.rolled[d.Name] = true
	if deploymentComplete(d) {
		delete(c.inFlight, d.Name)
		return
	}
	c.inFlight[d.Name] = true
	c.peak = max(c.peak, len(c.inFlight))
}

// rolling is the number of Deployments rolling out now.
func (c *rolloutCounter) rolling() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.inFlight)
}

// counts are the Deployments that rolled out a newer generation, and the
// most of them rolling at once.
func (c *rolloutCounter) counts() (rolled, peak int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.rolled), c.peak
}

// deploymentComplete reports whether a Deployment's controller has seen its latest
// generation and every replica is updated and available.
func deploymentComplete(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}
