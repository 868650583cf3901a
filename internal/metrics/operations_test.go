package metrics

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestOperations(t *testing.T) {
	failure := errors.New("boom")
	counter := func(c *prometheus.CounterVec, labels ...string) func() float64 {
		return func() float64 { return testutil.ToFloat64(c.WithLabelValues(labels...)) }
	}
	cases := []struct {
		name  string
		do    func()
		value func() float64
	}{
		{"install succeeded", func() { ReleaseOperation(OperationInstall, time.Now(), nil) },
			counter(releaseOperations, OperationInstall, outcomeSuccess)},
		{"upgrade failed", func() { ReleaseOperation(OperationUpgrade, time.Now(), failure) },
			counter(releaseOperations, OperationUpgrade, outcomeFailure)},
		{"rollback succeeded", func() { ReleaseRollback(nil) },
			counter(releaseOperations, OperationRollback, outcomeSuccess)},
		{"drift repaired", func() { DriftRepaired("Deployment") }, counter(driftRepairs, "Deployment")},
		{"release recovered", ReleaseRecovered, func() float64 { return testutil.ToFloat64(releaseRecoveries) }},
		{"backup complete", func() { BackupFinished(true, "Completed", time.Minute, 4096, 3) },
			counter(backupRuns, outcomeComplete, "Completed")},
		{"backup failed", func() { BackupFinished(false, "CredentialsError", time.Minute, 0, 0) },
			counter(backupRuns, outcomeFailed, "CredentialsError")},
		{"restore failed", func() { RestoreFinished(false, "VerificationFailed", time.Second) },
			counter(restoreRuns, outcomeFailed, "VerificationFailed")},
		{"restore complete", func() { RestoreFinished(true, "Completed", time.Second) },
			counter(restoreRuns, outcomeComplete, "Completed")},
		{"mover failed", func() { MoverFailed(MoverDelete, "StorageError") }, counter(moverFailures, MoverDelete, "StorageError")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.value()
			tc.do()
			if got := tc.value() - before; got != 1 {
				t.Errorf("counter grew by %v, want 1", got)
			}
		})
	}
}

func TestFinishedObservesCompleteRunsOnly(t *testing.T) {
	samples := func(h prometheus.Histogram) uint64 {
		m := &dto.Metric{}
		if err := h.Write(m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	before := [...]uint64{samples(backupDuration), samples(backupSize), samples(backupFiles), samples(restoreDuration)}
	BackupFinished(false, "StorageError", time.Minute, 1, 1)
	RestoreFinished(false, "StorageError", time.Minute)
	BackupFinished(true, "Completed", 90*time.Second, 1<<20, 12)
	RestoreFinished(true, "Completed", time.Minute)
	after := [...]uint64{samples(backupDuration), samples(backupSize), samples(backupFiles), samples(restoreDuration)}
	for i := range before {
		if after[i]-before[i] != 1 {
			t.Errorf("histogram %d observed %d samples, want 1", i, after[i]-before[i])
		}
	}
}

func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	for range 2 {
		if err := Register(reg, NewCollector(fake.NewClientBuilder().WithScheme(scheme(t)).Build())); err != nil {
			t.Fatal(err)
		}
	}
	if problems, err := testutil.GatherAndLint(reg, "echo_operator_helm_release_operations_total", "echo_operator_backup_size_bytes"); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
