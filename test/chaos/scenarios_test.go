//go:build linux

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// scenario is one operation of the operator, run in a namespace of its
// own: setup prepares it with the manager running and the proxy not yet
// armed, act starts it (and drives it on, when it has steps), and
// converged says whether everything reached the state it must end in.
type scenario struct {
	name      string
	setup     func(ctx context.Context, r *run) error
	act       func(ctx context.Context, r *run) error
	converged func(ctx context.Context, r *run) error
}

// run is the state of one run of a scenario.
type run struct {
	ns  string
	env *s3Env
	// source is the data in the source Echo's claim when it was backed up.
	source map[string][]byte
	// actStart is when act began.
	actStart time.Time
}

const (
	sourceEcho   = "src"
	copyEcho     = "copy"
	backupName   = "snap"
	baseBackup   = "base"
	restoreName  = "back"
	scheduleName = "nightly"
	keepLast     = 2
)

func (r *run) key(name string) types.NamespacedName {
	return types.NamespacedName{Namespace: r.ns, Name: name}
}

// scenarios lists the crash-point scenarios.
func scenarios() []scenario {
	return []scenario{
		{name: "install", act: createPlainEcho, converged: plainEchoReady},
		{name: "upgrade", setup: plainEchoInstalled, act: changeMessage, converged: plainEchoReady},
		{name: "rollback", setup: plainEchoInstalled, act: failUpgradeThenFix, converged: plainEchoReady},
		{name: "uninstall", setup: persistentEchoInstalled, act: deleteSource, converged: sourceUninstalled},
		{name: "final-backup", setup: finalBackupEchoInstalled, act: deleteSource, converged: finalBackupTaken},
		{name: "backup", setup: persistentEchoInstalled, act: createBackup, converged: backupTaken},
		{name: "schedule", setup: scheduleReady, act: resumeSchedule, converged: scheduleRanAndPruned},
		{name: "restore-in-place", setup: backedUpAndChanged, act: restoreInPlace, converged: restoredInPlace},
		{name: "restore-new-echo", setup: backedUpAndChanged, act: restoreIntoNewEcho, converged: restoredIntoNewEcho},
	}
}

// --- Echo scenarios ---

func createPlainEcho(ctx context.Context, r *run) error {
	return k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: sourceEcho},
		Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1)},
	})
}

func plainEchoInstalled(ctx context.Context, r *run) error {
	if err := createPlainEcho(ctx, r); err != nil {
		return err
	}
	return await(ctx, func(ctx context.Context) error { return echoReady(ctx, r.key(sourceEcho)) })
}

func plainEchoReady(ctx context.Context, r *run) error {
	if err := echoReady(ctx, r.key(sourceEcho)); err != nil {
		return err
	}
	return namespaceClean(ctx, r.env, r.ns)
}

func changeMessage(ctx context.Context, r *run) error {
	return updateEcho(ctx, r.key(sourceEcho), func(e *echov1alpha1.Echo) { e.Spec.Message = "upgraded" })
}

// noIngresses is a ResourceQuota that allows no Ingress in the namespace:
// an upgrade that adds one passes Helm's checks, then fails on the API
// server once its release record is written, and is rolled back.
func noIngresses(ns string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "no-ingresses"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/ingresses.networking.k8s.io": resource.MustParse("0")}}}
}

// failUpgradeThenFix makes an upgrade fail, waits until the Echo reports
// the failure, then fixes the spec.
func failUpgradeThenFix(ctx context.Context, r *run) error {
	key := r.key(sourceEcho)
	if err := client.IgnoreAlreadyExists(k8sClient.Create(ctx, noIngresses(r.ns))); err != nil {
		return err
	}
	if err := updateEcho(ctx, key, func(e *echov1alpha1.Echo) {
		e.Spec.Ingress = &echov1alpha1.IngressSpec{Enabled: true, Host: "echo.example.test"}
	}); err != nil {
		return err
	}
	if err := await(ctx, func(ctx context.Context) error { return releaseFailed(ctx, key) }); err != nil {
		return fmt.Errorf("the bad upgrade never failed: %w", err)
	}
	return updateEcho(ctx, key, func(e *echov1alpha1.Echo) {
		e.Spec.Ingress = nil
		e.Spec.Message = "fixed"
	})
}

// releaseFailed checks that an Echo reports a failed release for its
// current generation.
func releaseFailed(ctx context.Context, key types.NamespacedName) error {
	e := &echov1alpha1.Echo{}
	if err := k8sClient.Get(ctx, key, e); err != nil {
		return err
	}
	c := meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionReleaseFailed)
	if c == nil || c.Status != metav1.ConditionTrue {
		return fmt.Errorf("echo %s reports no failed release yet", key)
	}
	return nil
}

func persistentEcho(r *run, name string) *echov1alpha1.Echo {
	return &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name},
		Spec: echov1alpha1.EchoSpec{
			Replicas:    ptr.To[int32](1),
			Persistence: &echov1alpha1.PersistenceSpec{Enabled: true},
		},
	}
}

// installWithJournal installs e, waits until it is Ready and journals
// requests into its claim.
func installWithJournal(ctx context.Context, r *run, e *echov1alpha1.Echo) error {
	if err := k8sClient.Create(ctx, e); err != nil {
		return err
	}
	if err := await(ctx, func(ctx context.Context) error { return echoReady(ctx, r.key(e.Name)) }); err != nil {
		return err
	}
	data, err := writeJournal(r.ns, chart.DataClaimName(e.Name), e.Name+"-0", 20)
	r.source = data
	return err
}

func persistentEchoInstalled(ctx context.Context, r *run) error {
	return installWithJournal(ctx, r, persistentEcho(r, sourceEcho))
}

func deleteSource(ctx context.Context, r *run) error {
	return k8sClient.Delete(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: sourceEcho}})
}

func sourceUninstalled(ctx context.Context, r *run) error {
	if err := echoGone(ctx, r.key(sourceEcho)); err != nil {
		return err
	}
	return namespaceClean(ctx, r.env, r.ns)
}

// --- Backups ---

func finalBackupEchoInstalled(ctx context.Context, r *run) error {
	e := persistentEcho(r, sourceEcho)
	storage := r.env.storage()
	e.Spec.Backup = &echov1alpha1.EchoBackupPolicy{BeforeDelete: &echov1alpha1.FinalBackupSpec{Enabled: true, Storage: &storage}}
	return installWithJournal(ctx, r, e)
}

func finalBackupTaken(ctx context.Context, r *run) error {
	if err := echoGone(ctx, r.key(sourceEcho)); err != nil {
		return err
	}
	list := &echov1alpha1.EchoBackupList{}
	if err := k8sClient.List(ctx, list, client.InNamespace(r.ns), client.MatchingLabels{echov1alpha1.FinalBackupOfLabel: sourceEcho}); err != nil {
		return err
	}
	if len(list.Items) != 1 {
		return fmt.Errorf("%d final backups, want 1", len(list.Items))
	}
	b, err := backupComplete(ctx, client.ObjectKeyFromObject(&list.Items[0]))
	if err != nil {
		return err
	}
	if err := artifactHolds(ctx, r.env, b, r.source); err != nil {
		return err
	}
	return namespaceClean(ctx, r.env, r.ns)
}

func newBackup(r *run, name string, policy echov1alpha1.DeletionPolicy) *echov1alpha1.EchoBackup {
	return &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: name},
		Spec:       echov1alpha1.EchoBackupSpec{EchoName: sourceEcho, Storage: r.env.storage(), DeletionPolicy: policy},
	}
}

func createBackup(ctx context.Context, r *run) error {
	return k8sClient.Create(ctx, newBackup(r, backupName, echov1alpha1.DeletionPolicyRetain))
}

func backupTaken(ctx context.Context, r *run) error {
	b, err := backupComplete(ctx, r.key(backupName))
	if err != nil {
		return err
	}
	if err := artifactHolds(ctx, r.env, b, r.source); err != nil {
		return err
	}
	if err := echoReady(ctx, r.key(sourceEcho)); err != nil {
		return err
	}
	return namespaceClean(ctx, r.env, r.ns)
}

// --- Schedules ---

// earlierRuns is how many runs of the schedule precede the one the
// scenario starts.
const earlierRuns = 3

// scheduleReady prepares a suspended schedule that looks as if it had
// run before: earlier backups of it, complete, and a last run time two
// minutes ago, so resuming it starts a run at once (the latest minute)
// and prunes past keepLast.
func scheduleReady(ctx context.Context, r *run) error {
	if err := persistentEchoInstalled(ctx, r); err != nil {
		return err
	}
	minute := time.Now().UTC().Truncate(time.Minute)
	for i := range earlierRuns {
		at := minute.Add(-time.Duration(earlierRuns+2-i) * time.Minute)
		b := newBackup(r, fmt.Sprintf("%s-%d", scheduleName, at.Unix()), echov1alpha1.DeletionPolicyDelete)
		b.Labels = map[string]string{echov1alpha1.ScheduleLabel: scheduleName}
		b.Annotations = map[string]string{echov1alpha1.ScheduledAtAnnotation: at.Format(time.RFC3339)}
		if err := k8sClient.Create(ctx, b); err != nil {
			return err
		}
		if err := await(ctx, func(ctx context.Context) error {
			_, err := backupComplete(ctx, client.ObjectKeyFromObject(b))
			return err
		}); err != nil {
			return err
		}
	}
	s := &echov1alpha1.EchoBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: scheduleName},
		Spec: echov1alpha1.EchoBackupScheduleSpec{
			Schedule:  "* * * * *",
			Suspend:   true,
			Retention: &echov1alpha1.RetentionPolicy{KeepLast: ptr.To[int32](keepLast)},
			Template:  newBackup(r, "", echov1alpha1.DeletionPolicyDelete).Spec,
		},
	}
	if err := k8sClient.Create(ctx, s); err != nil {
		return err
	}
	if err := await(ctx, func(ctx context.Context) error { return scheduleObserved(ctx, r) }); err != nil {
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Status.LastScheduleTime = &metav1.Time{Time: minute.Add(-2 * time.Minute)}
	return k8sClient.Status().Patch(ctx, s, patch)
}

func scheduleObserved(ctx context.Context, r *run) error {
	s := &echov1alpha1.EchoBackupSchedule{}
	if err := k8sClient.Get(ctx, r.key(scheduleName), s); err != nil {
		return err
	}
	if s.Status.ObservedGeneration != s.Generation {
		return fmt.Errorf("schedule not observed yet")
	}
	return nil
}

func resumeSchedule(ctx context.Context, r *run) error {
	s := &echov1alpha1.EchoBackupSchedule{}
	if err := k8sClient.Get(ctx, r.key(scheduleName), s); err != nil {
		return err
	}
	patch := client.MergeFrom(s.DeepCopy())
	s.Spec.Suspend = false
	return k8sClient.Patch(ctx, s, patch)
}

// scheduleRanAndPruned checks that the resumed schedule ran (a backup of
// a run time at or after the resume), kept exactly keepLast backups, all
// complete and verified, and deleted the artifacts of the pruned ones.
func scheduleRanAndPruned(ctx context.Context, r *run) error {
	s := &echov1alpha1.EchoBackupSchedule{}
	if err := k8sClient.Get(ctx, r.key(scheduleName), s); err != nil {
		return err
	}
	list := &echov1alpha1.EchoBackupList{}
	if err := k8sClient.List(ctx, list, client.InNamespace(r.ns), client.MatchingLabels{echov1alpha1.ScheduleLabel: scheduleName}); err != nil {
		return err
	}
	if len(list.Items) != keepLast {
		return fmt.Errorf("%d backups of the schedule, want %d", len(list.Items), keepLast)
	}
	newest := ""
	for i := range list.Items {
		b, err := backupComplete(ctx, client.ObjectKeyFromObject(&list.Items[i]))
		if err != nil {
			return err
		}
		at, err := time.Parse(time.RFC3339, b.Annotations[echov1alpha1.ScheduledAtAnnotation])
		if err != nil {
			return fmt.Errorf("backup %s: %w", b.Name, err)
		}
		if !at.Before(r.actStart.Truncate(time.Minute)) {
			newest = b.Name
		}
		if err := artifactHolds(ctx, r.env, b, r.source); err != nil {
			return err
		}
	}
	if newest == "" {
		return fmt.Errorf("no backup of a run since the schedule was resumed")
	}
	if s.Status.LastSuccessfulBackup != newest {
		return fmt.Errorf("schedule reports %q as last successful backup, want %q", s.Status.LastSuccessfulBackup, newest)
	}
	return namespaceClean(ctx, r.env, r.ns)
}

// --- Restores ---

// backedUpAndChanged installs the source Echo, backs it up (the base
// backup) and then changes its data, so that a restore has something to
// put back.
func backedUpAndChanged(ctx context.Context, r *run) error {
	if err := persistentEchoInstalled(ctx, r); err != nil {
		return err
	}
	if err := k8sClient.Create(ctx, newBackup(r, baseBackup, echov1alpha1.DeletionPolicyRetain)); err != nil {
		return err
	}
	if err := await(ctx, func(ctx context.Context) error {
		_, err := backupComplete(ctx, r.key(baseBackup))
		return err
	}); err != nil {
		return err
	}
	later := filepath.Join(claimDir(r.ns, chart.DataClaimName(sourceEcho)), "journal", "later.jsonl")
	return os.WriteFile(later, []byte("{\"seq\":1}\n"), 0o600)
}

func restoreFrom(r *run, echoName string) *echov1alpha1.EchoRestore {
	return &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: restoreName},
		Spec: echov1alpha1.EchoRestoreSpec{
			Source:       echov1alpha1.RestoreSource{BackupName: baseBackup},
			EchoName:     echoName,
			ExistingData: echov1alpha1.ExistingDataReplace,
		},
	}
}

func restoreInPlace(ctx context.Context, r *run) error {
	return k8sClient.Create(ctx, restoreFrom(r, ""))
}

func restoreIntoNewEcho(ctx context.Context, r *run) error {
	return k8sClient.Create(ctx, restoreFrom(r, copyEcho))
}

func restoredInPlace(ctx context.Context, r *run) error {
	return restored(ctx, r, sourceEcho, false)
}

func restoredIntoNewEcho(ctx context.Context, r *run) error {
	if err := restored(ctx, r, copyEcho, true); err != nil {
		return err
	}
	return echoReady(ctx, r.key(sourceEcho))
}

// restored checks that the restore completed into echoName, which is
// Ready again on the backed-up data, byte for byte.
func restored(ctx context.Context, r *run, echoName string, created bool) error {
	rs, err := restoreComplete(ctx, r.key(restoreName))
	if err != nil {
		return err
	}
	if rs.Status.EchoName != echoName || rs.Status.EchoCreated != created {
		return fmt.Errorf("restore went into %q (created %t), want %q (created %t)", rs.Status.EchoName, rs.Status.EchoCreated, echoName, created)
	}
	if err := echoReady(ctx, r.key(echoName)); err != nil {
		return err
	}
	if err := claimHolds(r.ns, chart.DataClaimName(echoName), r.source); err != nil {
		return err
	}
	if _, err := backupComplete(ctx, r.key(baseBackup)); err != nil {
		return err
	}
	return namespaceClean(ctx, r.env, r.ns)
}
