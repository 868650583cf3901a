package controllers

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// A schedule's retention per location: the backup's own storage follows
// spec.retention, each copy its spec.copyRetention entry or else
// spec.retention. A backup that no location keeps goes whole; with
// deletionPolicy Delete, one that some locations keep loses its artifact
// at the others (PruneAnnotation), and the EchoBackup controller deletes
// it there (echobackup_prune.go). Everything is derived from the
// schedule's spec and the backups' statuses.

// retentionPlan is what retention does to a schedule's backups now.
type retentionPlan struct {
	// remove are the backups no location keeps: the EchoBackups go, and
	// their artifacts follow their deletion policy.
	remove []echov1alpha1.EchoBackup
	// prune are, by backup name, the locations (PruneAnnotation) whose
	// artifact goes while the backup stays for the others.
	prune map[string][]string
}

// planRetention decides, among a schedule's backups, what retention no
// longer keeps where. Only finished backups count, newest first, and
// each location is ranked over them alike; the newest successful backup
// is kept everywhere. Backups already being deleted neither count nor
// are pruned again. A copy still to be made or under way holds its
// backup back: neither the copy nor the backup's own artifact, which it
// reads, is pruned before it completed or failed.
func planRetention(backups []echov1alpha1.EchoBackup, spec *echov1alpha1.EchoBackupScheduleSpec, now time.Time) retentionPlan {
	plan := retentionPlan{prune: map[string][]string{}}
	if spec.Retention == nil && len(spec.CopyRetention) == 0 {
		return plan
	}
	finished := slices.DeleteFunc(slices.Clone(backups), func(b echov1alpha1.EchoBackup) bool {
		return !backupFinished(&b) || !b.DeletionTimestamp.IsZero()
	})
	sortNewestFirst(finished)
	newestGood := slices.IndexFunc(finished, backupSucceeded)
	for i, b := range finished {
		if i == newestGood {
			continue
		}
		expired := func(p *echov1alpha1.RetentionPolicy) bool { return retentionExpires(p, i, scheduledAt(b), now) }
		gone, locations := backupRetention(&b, expired(spec.Retention), func(name string) bool { return expired(copyRetention(spec, name)) })
		switch {
		case gone:
			plan.remove = append(plan.remove, b)
		case len(locations) > 0 && b.Spec.DeletionPolicy == echov1alpha1.DeletionPolicyDelete:
			plan.prune[b.Name] = locations
		}
	}
	return plan
}

// backupRetention says, for one backup, whether no location keeps it any
// more (gone), or else the locations holding its artifact that retention
// no longer keeps and that may be pruned now.
func backupRetention(b *echov1alpha1.EchoBackup, storageExpired bool, copyExpired func(string) bool) (gone bool, locations []string) {
	gone = storageExpired || backupPruned(b)
	settled := true
	for _, c := range b.Spec.CopyTo {
		if !backupSucceeded(*b) {
			// A failed backup is copied nowhere.
			continue
		}
		st := findCopyStatus(b, c.Name)
		switch {
		case st == nil || st.Phase == echov1alpha1.PhasePending || st.Phase == echov1alpha1.PhaseRunning:
			settled, gone = false, false
		case st.Phase == echov1alpha1.PhaseCompleted && copyExpired(c.Name):
			locations = append(locations, echov1alpha1.PruneCopyPrefix+c.Name)
		case st.Phase == echov1alpha1.PhaseCompleted:
			gone = false
		}
	}
	if gone {
		return true, nil
	}
	if storageExpired && settled && artifactStored(b) && !backupPruned(b) {
		locations = append(locations, echov1alpha1.PruneStorage)
	}
	return false, locations
}

// retentionExpires says whether policy no longer keeps the backup of rank
// i (0 the newest) started for at; a nil policy keeps everything.
func retentionExpires(policy *echov1alpha1.RetentionPolicy, i int, at, now time.Time) bool {
	if policy == nil {
		return false
	}
	tooMany := policy.KeepLast != nil && i >= int(*policy.KeepLast)
	tooOld := policy.MaxAge != nil && now.Sub(at) > policy.MaxAge.Duration
	return tooMany || tooOld
}

// copyRetention is the retention at the copy name: its own, or the
// schedule's.
func copyRetention(spec *echov1alpha1.EchoBackupScheduleSpec, name string) *echov1alpha1.RetentionPolicy {
	for i := range spec.CopyRetention {
		if spec.CopyRetention[i].Name == name {
			return &spec.CopyRetention[i].RetentionPolicy
		}
	}
	return spec.Retention
}

// findCopyStatus is the status of the copy name, nil when there is none.
func findCopyStatus(b *echov1alpha1.EchoBackup, name string) *echov1alpha1.BackupCopyStatus {
	for i := range b.Status.Copies {
		if b.Status.Copies[i].Name == name {
			return &b.Status.Copies[i]
		}
	}
	return nil
}

// backupPruned says whether the artifact in the backup's own storage was
// pruned.
func backupPruned(b *echov1alpha1.EchoBackup) bool {
	return meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionPruned)
}

// pruneRequested are the locations PruneAnnotation lists.
func pruneRequested(b *echov1alpha1.EchoBackup) []string {
	return annotationList(b, echov1alpha1.PruneAnnotation)
}

// annotationList is the comma-separated list the annotation key of o
// holds, without blanks or repeats.
func annotationList(o metav1.Object, key string) []string {
	var out []string
	for _, v := range strings.Split(o.GetAnnotations()[key], ",") {
		if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// withPruned is the value of PruneAnnotation listing locations besides
// those already listed, sorted; changed says it differs.
func withPruned(b *echov1alpha1.EchoBackup, locations []string) (value string, changed bool) {
	current := pruneRequested(b)
	all := slices.Clone(current)
	for _, l := range locations {
		if !slices.Contains(all, l) {
			all = append(all, l)
		}
	}
	slices.Sort(all)
	value = strings.Join(all, ",")
	return value, len(all) != len(current)
}
