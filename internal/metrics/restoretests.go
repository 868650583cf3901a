package metrics

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The restore tests of the EchoBackupSchedules (spec.restoreTest), read
// from their status: the series survive a restart of the operator.
var (
	restoreTestLastSuccessDesc = prometheus.NewDesc(namespace+"_restore_test_last_success_timestamp_seconds",
		"When the last successful restore test of an EchoBackupSchedule ended (Unix time); one series per schedule with one.",
		[]string{"namespace", "schedule"}, nil)
	restoreTestLastOutcomeDesc = prometheus.NewDesc(namespace+"_restore_test_last_outcome",
		"The outcome (Succeeded, Failed or Skipped) and reason of the restore test of an EchoBackupSchedule that ended last, always 1; one series per schedule with one.",
		[]string{"namespace", "schedule", "outcome", "reason"}, nil)
	restoreTestScheduleCreatedDesc = prometheus.NewDesc(namespace+"_restore_test_schedule_created_timestamp_seconds",
		"When an EchoBackupSchedule whose restore tests are not suspended was created (Unix time); one series per such schedule.",
		[]string{"namespace", "schedule"}, nil)
)

// restoreTestDescs are the descriptions of the restore test metrics.
var restoreTestDescs = []*prometheus.Desc{restoreTestLastSuccessDesc, restoreTestLastOutcomeDesc, restoreTestScheduleCreatedDesc}

// collectRestoreTests reports the restore tests of every schedule.
func (c *Collector) collectRestoreTests(ctx context.Context, ch chan<- prometheus.Metric) error {
	schedules := &echov1alpha1.EchoBackupScheduleList{}
	if err := c.reader.List(ctx, schedules); err != nil {
		return err
	}
	for i := range schedules.Items {
		s := &schedules.Items[i]
		if rt := s.Spec.RestoreTest; rt != nil && !rt.Suspend {
			ch <- prometheus.MustNewConstMetric(restoreTestScheduleCreatedDesc, prometheus.GaugeValue,
				unixSeconds(s.CreationTimestamp), s.Namespace, s.Name)
		}
		if t := s.Status.LastSuccessfulRestoreTestTime; t != nil {
			ch <- prometheus.MustNewConstMetric(restoreTestLastSuccessDesc, prometheus.GaugeValue, unixSeconds(*t), s.Namespace, s.Name)
		}
		if last := s.Status.LastRestoreTest; last != nil {
			ch <- prometheus.MustNewConstMetric(restoreTestLastOutcomeDesc, prometheus.GaugeValue, 1,
				s.Namespace, s.Name, string(last.Outcome), last.Reason)
		}
	}
	return nil
}
