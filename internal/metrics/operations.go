package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The operator's event-driven metrics: counted by the manager that does
// the work (the leader) as it does it. They start from zero with each
// process, as Prometheus counters do: read them with rate() or increase().

// Helm release operations, in the operation label.
const (
	OperationInstall   = "install"
	OperationUpgrade   = "upgrade"
	OperationRollback  = "rollback"
	OperationUninstall = "uninstall"
)

// Data mover operations, in the operation label.
const (
	MoverBackup  = "backup"
	MoverRestore = "restore"
	MoverDelete  = "delete"
)

// Outcomes, in the outcome label.
const (
	outcomeSuccess  = "success"
	outcomeFailure  = "failure"
	outcomeComplete = stateComplete
	outcomeFailed   = stateFailed
)

var (
	releaseOperations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "helm_release_operations_total",
		Help:      "Helm release operations the operator ran, by operation (install, upgrade, rollback, uninstall) and outcome (success, failure).",
	}, []string{"operation", "outcome"})
	releaseOperationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "helm_release_operation_duration_seconds",
		Help:      "How long Helm release operations took, by operation; a failed upgrade includes its rollback.",
		Buckets:   []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
	}, []string{"operation"})
	driftRepairs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "helm_drift_repairs_total",
		Help:      "Objects of a release found changed or deleted and written back as the release renders them, by kind.",
	}, []string{"kind"})
	releaseRecoveries = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "helm_release_recoveries_total",
		Help:      "Releases an interrupted operator left pending, marked failed so they could be retried.",
	})
	backupRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "backup_runs_total",
		Help:      "EchoBackups that finished, by outcome (complete, failed) and the reason of their condition.",
	}, []string{"outcome", "reason"})
	backupDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "backup_duration_seconds",
		Help:      "From start to completion of the EchoBackups that completed.",
		Buckets:   []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200},
	})
	backupSize = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "backup_size_bytes",
		Help:      "Artifact size of the EchoBackups that completed.",
		Buckets:   prometheus.ExponentialBuckets(1024, 4, 14), // 1 KiB to 64 GiB
	})
	backupFiles = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "backup_files",
		Help:      "Files in the EchoBackups that completed.",
		Buckets:   prometheus.ExponentialBuckets(1, 10, 7), // 1 to 1e6
	})
	restoreRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "restore_runs_total",
		Help:      "EchoRestores that finished, by outcome (complete, failed) and the reason of their condition.",
	}, []string{"outcome", "reason"})
	restoreDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "restore_duration_seconds",
		Help:      "From start to completion of the EchoRestores that completed.",
		Buckets:   []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200},
	})
	moverFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "datamover_failures_total",
		Help:      "Data mover Jobs that failed, by operation (backup, restore, delete) and reason.",
	}, []string{"operation", "reason"})
)

// operationCollectors are the event-driven metrics, registered by Register.
func operationCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		releaseOperations, releaseOperationDuration, driftRepairs, releaseRecoveries,
		backupRuns, backupDuration, backupSize, backupFiles,
		restoreRuns, restoreDuration, moverFailures, apiRequests,
	}
}

// ReleaseOperation records a Helm release operation that started at start
// and ended with err.
func ReleaseOperation(operation string, start time.Time, err error) {
	releaseOperations.WithLabelValues(operation, successOrFailure(err)).Inc()
	releaseOperationDuration.WithLabelValues(operation).Observe(time.Since(start).Seconds())
}

// ReleaseRollback records the rollback of a failed upgrade; its time is
// part of the upgrade's.
func ReleaseRollback(err error) {
	releaseOperations.WithLabelValues(OperationRollback, successOrFailure(err)).Inc()
}

// DriftRepaired records an object of kind written back to its rendered
// state.
func DriftRepaired(kind string) { driftRepairs.WithLabelValues(kind).Inc() }

// ReleaseRecovered records a pending release marked failed.
func ReleaseRecovered() { releaseRecoveries.Inc() }

// BackupFinished records an EchoBackup that finished, when its terminal
// status was written. Duration, size and files are observed for complete
// backups only.
func BackupFinished(complete bool, reason string, duration time.Duration, size, files int64) {
	if !complete {
		backupRuns.WithLabelValues(outcomeFailed, reason).Inc()
		return
	}
	backupRuns.WithLabelValues(outcomeComplete, reason).Inc()
	backupDuration.Observe(duration.Seconds())
	backupSize.Observe(float64(size))
	backupFiles.Observe(float64(files))
}

// RestoreFinished records an EchoRestore that finished, when its terminal
// status was written.
func RestoreFinished(complete bool, reason string, duration time.Duration) {
	if !complete {
		restoreRuns.WithLabelValues(outcomeFailed, reason).Inc()
		return
	}
	restoreRuns.WithLabelValues(outcomeComplete, reason).Inc()
	restoreDuration.Observe(duration.Seconds())
}

// MoverFailed records a data mover Job that failed.
func MoverFailed(operation, reason string) { moverFailures.WithLabelValues(operation, reason).Inc() }

func successOrFailure(err error) string {
	if err != nil {
		return outcomeFailure
	}
	return outcomeSuccess
}
