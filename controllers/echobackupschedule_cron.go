package controllers

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/meta"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/names"
)

// cronParser reads the five-field cron format and the @ descriptors, as
// Kubernetes CronJobs do.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// maxMissedRuns bounds the walk over missed run times, after a long
// operator outage, to the most recent one.
const maxMissedRuns = 10000

// parseSchedule reads a schedule in its time zone.
func parseSchedule(spec, zone string) (cron.Schedule, error) {
	loc, err := time.LoadLocation(cmp.Or(zone, "UTC"))
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q: %w", zone, err)
	}
	if strings.Contains(spec, "TZ=") {
		return nil, fmt.Errorf("schedule %q names a time zone: use spec.timeZone instead", spec)
	}
	sched, err := cronParser.Parse("CRON_TZ=" + loc.String() + " " + spec)
	if err != nil {
		return nil, fmt.Errorf("invalid schedule %q: %w", spec, err)
	}
	return sched, nil
}

// lastDueTime is the most recent run time after since and not after now,
// if any: runs missed while the operator was away collapse into one.
func lastDueTime(sched cron.Schedule, since, now time.Time) (time.Time, bool) {
	var due time.Time
	for t, i := sched.Next(since), 0; !t.After(now) && i < maxMissedRuns; t, i = sched.Next(t), i+1 {
		due = t
	}
	return due, !due.IsZero()
}

// scheduledBackupName names the backup a schedule starts at a run time;
// the name being deterministic, a second attempt finds the first.
func scheduledBackupName(schedule string, at time.Time) string {
	return names.Child(schedule, strconv.FormatInt(at.Unix(), 10))
}

// requestedBackupName names the backup a request for a backup now starts:
// the same request seen at the same resourceVersion gives the same name.
func requestedBackupName(schedule, request, resourceVersion string) string {
	sum := sha256.Sum256([]byte(resourceVersion + "\x00" + request))
	return names.Child(schedule, "now-"+hex.EncodeToString(sum[:])[:10])
}

// backupsToPrune picks, among a schedule's backups, the finished ones the
// retention policy no longer keeps anywhere (planRetention).
func backupsToPrune(backups []echov1alpha1.EchoBackup, policy *echov1alpha1.RetentionPolicy, now time.Time) []echov1alpha1.EchoBackup {
	return planRetention(backups, &echov1alpha1.EchoBackupScheduleSpec{Retention: policy}, now).remove
}

// scheduledAt is the run time a scheduled backup was started for, read from
// its annotation; a backup without one falls back to its creation time.
func scheduledAt(b echov1alpha1.EchoBackup) time.Time {
	if at, err := time.Parse(time.RFC3339, b.Annotations[echov1alpha1.ScheduledAtAnnotation]); err == nil {
		return at
	}
	return b.CreationTimestamp.Time
}

// sortNewestFirst orders backups by run time, newest first, and by name
// when run times tie, so the order never depends on the list order.
func sortNewestFirst(backups []echov1alpha1.EchoBackup) {
	slices.SortFunc(backups, func(a, b echov1alpha1.EchoBackup) int {
		return cmp.Or(scheduledAt(b).Compare(scheduledAt(a)), strings.Compare(b.Name, a.Name))
	})
}

func backupSucceeded(b echov1alpha1.EchoBackup) bool {
	return meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete)
}
