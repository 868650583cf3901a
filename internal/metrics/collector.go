package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

const namespace = "echo_operator"

// collectTimeout bounds the lists of one scrape.
const collectTimeout = 10 * time.Second

var (
	echoesDesc = prometheus.NewDesc(namespace+"_echoes",
		"Echoes by the status and reason of their Ready condition.",
		[]string{"ready", "reason"}, nil)
	lastBackupDesc = prometheus.NewDesc(namespace+"_backup_last_success_timestamp_seconds",
		"When the newest complete backup of an Echo completed (Unix time); one series per Echo with a complete EchoBackup.",
		[]string{"namespace", "echo"}, nil)
	lastFailureDesc = prometheus.NewDesc(namespace+"_backup_last_failure_timestamp_seconds",
		"When the newest failed backup of an Echo failed (Unix time); one series per Echo with a failed EchoBackup.",
		[]string{"namespace", "echo"}, nil)
	lastScheduledDesc = prometheus.NewDesc(namespace+"_backup_last_scheduled_timestamp_seconds",
		"When the latest scheduled backup of an Echo was due (Unix time), the latest of its unsuspended EchoBackupSchedules; one series per Echo with one that has run.",
		[]string{"namespace", "echo"}, nil)
	nextBackupDesc = prometheus.NewDesc(namespace+"_backup_next_scheduled_timestamp_seconds",
		"When the next scheduled backup of an Echo is due (Unix time), the soonest of its unsuspended EchoBackupSchedules; one series per Echo with one.",
		[]string{"namespace", "echo"}, nil)
	lastCopyDesc = prometheus.NewDesc(namespace+"_backup_copy_last_success_timestamp_seconds",
		"When the newest completed copy (spec.copyTo) of an Echo's backups completed (Unix time), by copy name; one series per Echo and copy with a completed copy.",
		[]string{"namespace", "echo", "copy"}, nil)
	lastCopyFailureDesc = prometheus.NewDesc(namespace+"_backup_copy_last_failure_timestamp_seconds",
		"When the newest failed copy (spec.copyTo) of an Echo's backups failed (Unix time), by copy name; one series per Echo and copy with a failed copy.",
		[]string{"namespace", "echo", "copy"}, nil)
	backupsDesc = prometheus.NewDesc(namespace+"_backups",
		"EchoBackups by state: complete, failed or running.",
		[]string{"state"}, nil)
	restoresDesc = prometheus.NewDesc(namespace+"_restores",
		"EchoRestores by state: complete, failed or running.",
		[]string{"state"}, nil)
)

// States of a backup or restore, in the metrics' state label.
const (
	stateComplete = "complete"
	stateFailed   = "failed"
	stateRunning  = "running"
)

// Collector reads the operator's objects at each scrape.
type Collector struct {
	reader client.Reader
}

// NewCollector returns a Collector that lists objects through reader (the
// manager's cached client).
func NewCollector(reader client.Reader) *Collector {
	return &Collector{reader: reader}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{echoesDesc, lastBackupDesc, lastFailureDesc, lastCopyDesc, lastCopyFailureDesc,
		lastScheduledDesc, nextBackupDesc, backupsDesc, restoresDesc}, restoreTestDescs...) {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A list that fails leaves its
// metrics out of this scrape, and is logged.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	// The cache answers at once once synced; the bound keeps a scrape
	// before then from hanging.
	ctx, cancel := context.WithTimeout(context.Background(), collectTimeout)
	defer cancel()
	logger := log.FromContext(ctx).WithName("metrics")
	if err := c.collectEchoes(ctx, ch); err != nil {
		logger.Error(err, "Listing Echoes for the metrics")
	}
	if err := c.collectBackups(ctx, ch); err != nil {
		logger.Error(err, "Listing EchoBackups for the metrics")
	}
	if err := c.collectSchedules(ctx, ch); err != nil {
		logger.Error(err, "Listing EchoBackupSchedules for the metrics")
	}
	if err := c.collectRestores(ctx, ch); err != nil {
		logger.Error(err, "Listing EchoRestores for the metrics")
	}
	if err := c.collectRestoreTests(ctx, ch); err != nil {
		logger.Error(err, "Listing EchoBackupSchedules for the restore test metrics")
	}
}

type readiness struct{ status, reason string }

func (c *Collector) collectEchoes(ctx context.Context, ch chan<- prometheus.Metric) error {
	echoes := &echov1alpha1.EchoList{}
	if err := c.reader.List(ctx, echoes); err != nil {
		return err
	}
	counts := map[readiness]int{}
	for i := range echoes.Items {
		r := readiness{status: string(metav1.ConditionUnknown), reason: "Unknown"}
		if cond := meta.FindStatusCondition(echoes.Items[i].Status.Conditions, echov1alpha1.EchoConditionReady); cond != nil {
			r = readiness{status: string(cond.Status), reason: cond.Reason}
		}
		counts[r]++
	}
	for r, n := range counts {
		ch <- prometheus.MustNewConstMetric(echoesDesc, prometheus.GaugeValue, float64(n), r.status, r.reason)
	}
	return nil
}

type echoKey struct{ namespace, name string }

func (c *Collector) collectBackups(ctx context.Context, ch chan<- prometheus.Metric) error {
	backups := &echov1alpha1.EchoBackupList{}
	if err := c.reader.List(ctx, backups); err != nil {
		return err
	}
	states := map[string]int{stateComplete: 0, stateFailed: 0, stateRunning: 0}
	lastSuccess, lastFailure := latestTimes{}, latestTimes{}
	copySuccess, copyFailure := latestCopyTimes{}, latestCopyTimes{}
	for i := range backups.Items {
		b := &backups.Items[i]
		// A pruned copy completed before its schedule's retention
		// deleted it.
		copySuccess.keepCopies(b, echov1alpha1.PhaseCompleted, echov1alpha1.PhasePruned)
		copyFailure.keepCopies(b, echov1alpha1.PhaseFailed)
		state := outcome(b.Status.Conditions, echov1alpha1.BackupConditionComplete, echov1alpha1.BackupConditionFailed)
		states[state]++
		key := echoKey{b.Namespace, b.Spec.EchoName}
		switch state {
		case stateComplete:
			lastSuccess.keepLatest(key, b.Status.CompletionTime)
		case stateFailed:
			lastFailure.keepLatest(key, b.Status.CompletionTime)
		}
	}
	for state, n := range states {
		ch <- prometheus.MustNewConstMetric(backupsDesc, prometheus.GaugeValue, float64(n), state)
	}
	lastSuccess.collect(ch, lastBackupDesc)
	lastFailure.collect(ch, lastFailureDesc)
	copySuccess.collect(ch, lastCopyDesc)
	copyFailure.collect(ch, lastCopyFailureDesc)
	return nil
}

// copyKey is one copy name of an Echo's backups.
type copyKey struct{ namespace, echo, copy string }

// latestCopyTimes keeps the latest time seen per Echo and copy name.
type latestCopyTimes map[copyKey]metav1.Time

// keepCopies keeps the completion times of the backup's copies in one
// of phases.
func (l latestCopyTimes) keepCopies(b *echov1alpha1.EchoBackup, phases ...echov1alpha1.Phase) {
	for _, c := range b.Status.Copies {
		if !slices.Contains(phases, c.Phase) || c.CompletionTime == nil {
			continue
		}
		key := copyKey{b.Namespace, b.Spec.EchoName, c.Name}
		if cur, ok := l[key]; !ok || cur.Before(c.CompletionTime) {
			l[key] = *c.CompletionTime
		}
	}
}

func (l latestCopyTimes) collect(ch chan<- prometheus.Metric, desc *prometheus.Desc) {
	for key, t := range l {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, unixSeconds(t), key.namespace, key.echo, key.copy)
	}
}

// latestTimes keeps the latest time seen per Echo.
type latestTimes map[echoKey]metav1.Time

func (l latestTimes) keepLatest(key echoKey, t *metav1.Time) {
	if t == nil {
		return
	}
	if cur, ok := l[key]; !ok || cur.Before(t) {
		l[key] = *t
	}
}

func (l latestTimes) collect(ch chan<- prometheus.Metric, desc *prometheus.Desc) {
	for key, t := range l {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, unixSeconds(t), key.namespace, key.name)
	}
}

func (c *Collector) collectSchedules(ctx context.Context, ch chan<- prometheus.Metric) error {
	schedules := &echov1alpha1.EchoBackupScheduleList{}
	if err := c.reader.List(ctx, schedules); err != nil {
		return err
	}
	next, last := map[echoKey]metav1.Time{}, latestTimes{}
	for i := range schedules.Items {
		s := &schedules.Items[i]
		if s.Spec.Suspend {
			continue
		}
		key := echoKey{s.Namespace, s.Spec.Template.EchoName}
		last.keepLatest(key, s.Status.LastScheduleTime)
		if s.Status.NextScheduleTime == nil {
			continue
		}
		if t, ok := next[key]; !ok || s.Status.NextScheduleTime.Before(&t) {
			next[key] = *s.Status.NextScheduleTime
		}
	}
	for key, t := range next {
		ch <- prometheus.MustNewConstMetric(nextBackupDesc, prometheus.GaugeValue, unixSeconds(t), key.namespace, key.name)
	}
	last.collect(ch, lastScheduledDesc)
	return nil
}

func (c *Collector) collectRestores(ctx context.Context, ch chan<- prometheus.Metric) error {
	restores := &echov1alpha1.EchoRestoreList{}
	if err := c.reader.List(ctx, restores); err != nil {
		return err
	}
	states := map[string]int{stateComplete: 0, stateFailed: 0, stateRunning: 0}
	for i := range restores.Items {
		states[outcome(restores.Items[i].Status.Conditions, echov1alpha1.RestoreConditionComplete, echov1alpha1.RestoreConditionFailed)]++
	}
	for state, n := range states {
		ch <- prometheus.MustNewConstMetric(restoresDesc, prometheus.GaugeValue, float64(n), state)
	}
	return nil
}

// outcome is the state a backup or restore's Complete and Failed
// conditions give.
func outcome(conds []metav1.Condition, complete, failed string) string {
	switch {
	case meta.IsStatusConditionTrue(conds, failed):
		return stateFailed
	case meta.IsStatusConditionTrue(conds, complete):
		return stateComplete
	default:
		return stateRunning
	}
}

func unixSeconds(t metav1.Time) float64 {
	return float64(t.UnixNano()) / 1e9
}

// Register registers c and the event-driven metrics with registry, each in
// place of one registered before (a manager set up again in the same
// process).
func Register(registry prometheus.Registerer, c *Collector) error {
	for _, col := range append([]prometheus.Collector{c}, operationCollectors()...) {
		if err := registerReplacing(registry, col); err != nil {
			return fmt.Errorf("registering the operator's metrics: %w", err)
		}
	}
	return nil
}

func registerReplacing(registry prometheus.Registerer, c prometheus.Collector) error {
	err := registry.Register(c)
	var exists prometheus.AlreadyRegisteredError
	if errors.As(err, &exists) {
		registry.Unregister(exists.ExistingCollector)
		err = registry.Register(c)
	}
	return err
}
