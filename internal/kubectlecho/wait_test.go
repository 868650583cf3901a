package kubectlecho

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func backupWith(conditions ...metav1.Condition) *echov1alpha1.EchoBackup {
	b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1"}, Spec: echov1alpha1.EchoBackupSpec{EchoName: "web"}}
	for _, c := range conditions {
		c.LastTransitionTime = metav1.NewTime(testNow)
		b.Status.Conditions = append(b.Status.Conditions, c)
	}
	return b
}

var (
	running   = metav1.Condition{Type: echov1alpha1.BackupConditionComplete, Status: metav1.ConditionFalse, Reason: echov1alpha1.BackupReasonBackingUp, Message: "Job b1-backup is backing up Echo web"}
	completed = metav1.Condition{Type: echov1alpha1.BackupConditionComplete, Status: metav1.ConditionTrue, Reason: echov1alpha1.BackupReasonCompleted, Message: "Backed up 3 files"}
	failed    = metav1.Condition{Type: echov1alpha1.BackupConditionFailed, Status: metav1.ConditionTrue, Reason: echov1alpha1.BackupReasonJobFailed, Message: "The backup Job failed: \x1b[2Jexit 1"}
)

func TestWaitBackup(t *testing.T) {
	long := &waitFlags{wait: true, timeout: time.Minute}
	t.Run("completed", func(t *testing.T) {
		te := newTestEnv(t, backupWith(completed))
		if err := te.waitBackup(context.Background(), long, backupWith()); err != nil {
			t.Fatal(err)
		}
		if got := te.errOut.String(); got != "EchoBackup b1: Completed (Completed): Backed up 3 files\n" {
			t.Errorf("progress %q", got)
		}
	})
	t.Run("failed: the reason and message, terminal-safe", func(t *testing.T) {
		te := newTestEnv(t, backupWith(running, failed))
		err := te.waitBackup(context.Background(), long, backupWith())
		if !errors.Is(err, errFailed) || !strings.Contains(err.Error(), "EchoBackup b1 failed (JobFailed): The backup Job failed") {
			t.Fatalf("error %v", err)
		}
		expectTerminalSafe(t, te.errOut.String())
	})
	t.Run("the timeout passes, and the last progress is told", func(t *testing.T) {
		te := newTestEnv(t, backupWith(running))
		err := te.waitBackup(context.Background(), &waitFlags{wait: true, timeout: 50 * time.Millisecond}, backupWith())
		if !errors.Is(err, errTimedOut) || !strings.Contains(err.Error(), "last seen: EchoBackup b1: Running (BackingUp): Job b1-backup is backing up Echo web") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("the request timeout of the command's context does not end the wait", func(t *testing.T) {
		te := newTestEnv(t, backupWith(running))
		reads := 0
		te.client = interceptor.NewClient(te.client.(client.WithWatch), interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				// The backup completes between the first read and the second.
				if err := c.Get(ctx, key, obj, opts...); err != nil {
					return err
				}
				if reads++; reads >= 2 {
					obj.(*echov1alpha1.EchoBackup).Status = backupWith(completed).Status
				}
				return nil
			},
		})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		if err := te.waitBackup(ctx, long, backupWith()); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(te.errOut.String(), "\n"); got != 2 || !strings.Contains(te.errOut.String(), "Running (BackingUp)") {
			t.Errorf("progress, one line a change:\n%s", te.errOut)
		}
	})
}

func TestWaitEchoReady(t *testing.T) {
	echoAt := func(ready metav1.ConditionStatus, readyGen, observed int64) *echov1alpha1.Echo {
		e := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
		e.Status.ObservedGeneration = observed
		e.Status.Conditions = []metav1.Condition{{Type: echov1alpha1.EchoConditionReady, Status: ready, Reason: "Available",
			ObservedGeneration: readyGen, LastTransitionTime: metav1.NewTime(testNow)}}
		return e
	}
	short := &waitFlags{wait: true, timeout: 50 * time.Millisecond}
	for _, tc := range []struct {
		name string
		echo *echov1alpha1.Echo
		done bool
	}{
		{"Ready at the new generation", echoAt(metav1.ConditionTrue, 3, 3), true},
		{"Ready, decided for the old generation", echoAt(metav1.ConditionTrue, 2, 2), false},
		{"Ready decided for the new generation, the workload renders the old one", echoAt(metav1.ConditionTrue, 3, 2), false},
		{"not Ready at the new generation", echoAt(metav1.ConditionFalse, 3, 3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			te := newTestEnv(t, tc.echo)
			err := te.waitEchoReady(context.Background(), short, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}, 3)
			if (err == nil) != tc.done || (err != nil && !errors.Is(err, errTimedOut)) {
				t.Errorf("error %v, want done %v", err, tc.done)
			}
		})
	}
}

// TestBackupFromScheduleWaits: with --wait, a backup now from a schedule
// follows the backup the schedule starts on that request, not one it
// started before.
func TestBackupFromScheduleWaits(t *testing.T) {
	schedule := &echov1alpha1.EchoBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-nightly"},
		Spec: echov1alpha1.EchoBackupScheduleSpec{Template: echov1alpha1.EchoBackupSpec{EchoName: "web"}}}
	started := func(name string, c metav1.Condition) *echov1alpha1.EchoBackup {
		b := backupWith(c)
		b.Name, b.Labels = name, map[string]string{echov1alpha1.ScheduleLabel: "web-nightly"}
		return b
	}
	te := newTestEnv(t, schedule, started("web-nightly-now-0123456789", failed), started("web-nightly-1767322800", failed))
	// The schedule's controller starts a backup when asked.
	te.client = interceptor.NewClient(te.client.(client.WithWatch), interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			return c.Create(ctx, started("web-nightly-now-abcdef0123", completed))
		},
	})
	b, err := te.backupFromSchedule(context.Background(), "web", "web-nightly", output(t, "", false), &waitFlags{wait: true, timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if b == nil || b.Name != "web-nightly-now-abcdef0123" {
		t.Fatalf("follows %v, want web-nightly-now-abcdef0123", b)
	}
	if err := te.finishBackup(context.Background(), b, output(t, "", false), &waitFlags{wait: true, timeout: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(te.out.String(), "EchoBackup web-nightly-now-abcdef0123 completed") {
		t.Errorf("printed:\n%s", te.out)
	}
}
