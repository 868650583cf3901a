package kubectlecho

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// hostileMessage holds what a tenant might write into a condition: an
// escape sequence, a C1 control, DEL and a right-to-left override.
const hostileMessage = "ok\x1b]0;title\x07 \u009b2J \x7f \u202egpj.exe"

func hostileEcho() *echov1alpha1.Echo {
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Generation: 2}}
	echo.Status.ObservedGeneration = 2
	echo.Status.Conditions = []metav1.Condition{{Type: echov1alpha1.EchoConditionReady, Status: metav1.ConditionFalse,
		Reason: "RollingOut", Message: hostileMessage, LastTransitionTime: metav1.NewTime(testNow)}}
	return echo
}

func expectTerminalSafe(t *testing.T, got string) {
	t.Helper()
	for _, r := range got {
		if r != '\n' && unsafeRune(r) {
			t.Fatalf("printed the control character %U:\n%q", r, got)
		}
	}
}

func TestStatusPrintsTheEcho(t *testing.T) {
	t.Run("json: the Echo with its kind, escaped for terminals, reading back alike", func(t *testing.T) {
		te := newTestEnv(t, hostileEcho())
		if err := te.status(context.Background(), "web", output(t, "json", true)); err != nil {
			t.Fatal(err)
		}
		expectTerminalSafe(t, te.out.String())
		var got echov1alpha1.Echo
		if err := json.Unmarshal(te.out.Bytes(), &got); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, te.out)
		}
		if got.APIVersion != "echo.dev/v1alpha1" || got.Kind != "Echo" || got.Name != "web" {
			t.Errorf("printed %s %s %s, want echo.dev/v1alpha1 Echo web", got.APIVersion, got.Kind, got.Name)
		}
		if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Message != hostileMessage {
			t.Errorf("the condition reads back as %+v", got.Status.Conditions)
		}
	})
	t.Run("yaml", func(t *testing.T) {
		te := newTestEnv(t, hostileEcho())
		if err := te.status(context.Background(), "web", output(t, "yaml", true)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"apiVersion: echo.dev/v1alpha1\n", "kind: Echo\n", "  name: web\n"} {
			if !strings.Contains(te.out.String(), want) {
				t.Errorf("no %q in:\n%s", want, te.out)
			}
		}
		if strings.ContainsAny(te.out.String(), "\x1b\x07\x7f\u009b") {
			t.Errorf("yaml printed a control character as it is:\n%q", te.out)
		}
	})
	t.Run("name", func(t *testing.T) {
		te := newTestEnv(t, hostileEcho())
		if err := te.status(context.Background(), "web", output(t, "name", true)); err != nil {
			t.Fatal(err)
		}
		if got := te.out.String(); got != "echo.echo.dev/web\n" {
			t.Errorf("printed %q", got)
		}
	})
	t.Run("wide adds the generations and conditions", func(t *testing.T) {
		te := newTestEnv(t, hostileEcho())
		if err := te.status(context.Background(), "web", output(t, "wide", true)); err != nil {
			t.Fatal(err)
		}
		got := te.out.String()
		expectTerminalSafe(t, got)
		for _, want := range []string{`(?m)^Generation:\s+2, observed 2$`, `(?m)^Conditions:\s+Ready=False \(RollingOut\)$`} {
			if !regexp.MustCompile(want).MatchString(got) {
				t.Errorf("no %s in:\n%s", want, got)
			}
		}
	})
}

func revision(n int, status string) *livev1alpha1.EchoRevision {
	return &livev1alpha1.EchoRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web.v" + string(rune('0'+n)), Labels: map[string]string{livev1alpha1.EchoLabel: "web"}},
		Echo:       "web", Revision: n, Status: status, Chart: "echo-0.1.0", AppVersion: "1.2.3",
		LastDeployed: &metav1.Time{Time: testNow.Add(-2 * 60e9)}, Description: "Upgrade complete",
	}
}

func TestHistoryPrintsAListOfRevisions(t *testing.T) {
	objs := []*livev1alpha1.EchoRevision{revision(2, "deployed"), revision(1, "superseded")}
	t.Run("json", func(t *testing.T) {
		te := newTestEnv(t, objs[0], objs[1])
		if err := te.history(context.Background(), "web", output(t, "json", true)); err != nil {
			t.Fatal(err)
		}
		var list struct {
			APIVersion, Kind string
			Items            []livev1alpha1.EchoRevision
		}
		if err := json.Unmarshal(te.out.Bytes(), &list); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, te.out)
		}
		if list.APIVersion != "v1" || list.Kind != "List" || len(list.Items) != 2 {
			t.Fatalf("printed %s %s with %d items, want a v1 List of 2", list.APIVersion, list.Kind, len(list.Items))
		}
		for i, item := range list.Items {
			if item.APIVersion != "live.echo.dev/v1alpha1" || item.Kind != "EchoRevision" || item.Revision != i+1 {
				t.Errorf("item %d is %s %s revision %d", i, item.APIVersion, item.Kind, item.Revision)
			}
		}
	})
	t.Run("name, oldest first", func(t *testing.T) {
		te := newTestEnv(t, objs[0], objs[1])
		if err := te.history(context.Background(), "web", output(t, "name", true)); err != nil {
			t.Fatal(err)
		}
		if got, want := te.out.String(), "echorevision.live.echo.dev/web.v1\nechorevision.live.echo.dev/web.v2\n"; got != want {
			t.Errorf("printed %q, want %q", got, want)
		}
	})
	t.Run("wide adds the app version", func(t *testing.T) {
		te := newTestEnv(t, objs[0], objs[1])
		if err := te.history(context.Background(), "web", output(t, "wide", true)); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(te.out.String(), "\n")
		if !strings.HasSuffix(strings.TrimSpace(lines[0]), "APP VERSION   FIRST DEPLOYED") || !strings.Contains(lines[1], "1.2.3") {
			t.Errorf("printed:\n%s", te.out)
		}
	})
}

func TestBackupsPrintsAnEmptyList(t *testing.T) {
	te := newTestEnv(t)
	if err := te.backups(context.Background(), "", output(t, "json", true)); err != nil {
		t.Fatal(err)
	}
	var list map[string]any
	if err := json.Unmarshal(te.out.Bytes(), &list); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, te.out)
	}
	if list["kind"] != "List" || len(list["items"].([]any)) != 0 {
		t.Errorf("printed %s", te.out)
	}
}

func TestOutputFormats(t *testing.T) {
	for _, tc := range []struct {
		format string
		wide   bool
		ok     bool
	}{
		{"", false, true}, {"json", false, true}, {"yaml", false, true}, {"name", false, true}, {"jsonpath={.status.size}", false, true},
		{"wide", true, true}, {"wide", false, false}, {"table", true, false},
	} {
		o := newOutputFlags(tc.wide)
		o.print.AddFlags(&cobra.Command{})
		*o.print.OutputFormat = tc.format
		if err := o.validate(); (err == nil) != tc.ok {
			t.Errorf("-o %q (wide allowed: %v): error %v, want ok %v", tc.format, tc.wide, err, tc.ok)
		}
	}
}

func TestStatusTellsTheRestoreTestAndTheCopies(t *testing.T) {
	echo := hostileEcho()
	done := metav1.NewTime(testNow.Add(-time.Hour))
	echo.Status.LastSuccessfulBackup = &echov1alpha1.BackupReference{Name: "web-nightly-1", CompletionTime: done}
	echo.Status.LastRestoreTest = &echov1alpha1.RestoreTestResult{Schedule: "nightly", Backup: "web-nightly-1",
		CompletionTime: done, Outcome: echov1alpha1.RestoreTestFailed, Reason: "VerificationFailed", Message: "journal/journal-0.jsonl differs"}
	backup := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-nightly-1"},
		Spec: echov1alpha1.EchoBackupSpec{CopyTo: []echov1alpha1.BackupCopy{{Name: "offsite"}, {Name: "dr"}, {Name: "late"}}},
		Status: echov1alpha1.EchoBackupStatus{Copies: []echov1alpha1.BackupCopyStatus{
			{Name: "offsite", Phase: echov1alpha1.PhaseCompleted, Reason: "Copied"},
			{Name: "dr", Phase: echov1alpha1.PhaseFailed, Reason: "StorageError"}}}}
	te := newTestEnv(t, echo, backup)
	if err := te.status(context.Background(), "web", output(t, "", false)); err != nil {
		t.Fatal(err)
	}
	got := te.out.String()
	for _, want := range []string{
		`(?m)^Last restore test:\s+Failed \(VerificationFailed\), backup web-nightly-1, 2026-01-02T02:04:05Z \(60m ago\), by schedule nightly: journal/journal-0.jsonl differs$`,
		`(?m)^Last backup's copies:\s+offsite Completed \(Copied\), dr Failed \(StorageError\), late Pending$`,
	} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("no %s in:\n%s", want, got)
		}
	}
}
