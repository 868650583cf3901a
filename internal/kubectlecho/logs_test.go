package kubectlecho

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestParseLogsTarget(t *testing.T) {
	for _, tc := range []struct{ arg, kind, name string }{
		{"b1", logsBackup, "b1"},
		{"backup/b1", logsBackup, "b1"},
		{"echobackup/b1", logsBackup, "b1"},
		{"restore/r1", logsRestore, "r1"},
		{"EchoRestore/r1", logsRestore, "r1"},
		{"echo/e1", "", ""},
		{"restore/", "", ""},
		{"restore/a/b", "", ""},
	} {
		got, err := parseLogsTarget(tc.arg)
		if got.kind != tc.kind || got.name != tc.name || (err != nil) != (tc.kind == "") {
			t.Errorf("parseLogsTarget(%q) = %q, %q, %v; want %q, %q", tc.arg, got.kind, got.name, err, tc.kind, tc.name)
		}
	}
}

func TestFormatLogLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"time":"2026-01-01T00:00:00Z","level":"ERROR","msg":"backup failed","command":"backup","error":"s3: access denied","reason":"AccessDenied","retryable":false,"seconds":0.25}`,
			`2026-01-01T00:00:00Z ERROR backup failed command=backup error="s3: access denied" reason=AccessDenied retryable=false seconds=0.25`},
		{`not json`, `not json`},
		{`{"broken":`, `{"broken":`},
		{`{"msg":"x","empty":""}`, `x empty=""`},
	} {
		if got := formatLogLine(tc.in); got != tc.want {
			t.Errorf("formatLogLine(%s)\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
}

func TestPrintLogLinesIsTerminalSafe(t *testing.T) {
	in := "plain\n\x1b]0;pwned\x07title\r\n{\"msg\":\"bucket \\u001b[2J\",\"k\":\"\\u202eevil\"}\n" + strings.Repeat("z", maxLogLine+10)
	var out bytes.Buffer
	if err := printLogLines(&out, strings.NewReader(in), false); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\x07\r\u202e") {
		t.Errorf("control characters reach the terminal: %q", got)
	}
	for _, want := range []string{"plain\n", `\x1b]0;pwned\x07title` + "\n", `bucket \x1b[2J`, strings.Repeat("z", 100)} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%q", want, got)
		}
	}
	if n := strings.Count(got, "z"); n != maxLogLine+10 {
		t.Errorf("a long line lost bytes: %d of %d", n, maxLogLine+10)
	}
}

// logsFrom serves the live log of one pod, and fails for any other.
func logsFrom(pod, text string) podLogs {
	return func(_ context.Context, _, name string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
		if name != pod || opts.Container != moverContainer {
			return nil, errors.New("read the log of pod " + name)
		}
		return io.NopCloser(strings.NewReader(text)), nil
	}
}

func TestLogs(t *testing.T) {
	ctx := context.Background()
	kept := &echov1alpha1.MoverLog{Job: "b1-backup", JobUID: "job-1", Pod: "b1-backup-abcde", Attempt: 3, Truncated: true,
		Log: `{"level":"ERROR","msg":"backup failed","error":"bucket \"x\" does not exist"}` + "\n"}
	failed := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1"}, Status: echov1alpha1.EchoBackupStatus{
		Phase: echov1alpha1.PhaseFailed, Reason: "StorageError", Jobs: []echov1alpha1.JobReference{{Name: "b1-backup", UID: "job-1"}}, MoverLog: kept}}

	t.Run("a finished backup's kept log", func(t *testing.T) {
		te := newTestEnv(t, failed)
		if err := te.logs(ctx, logsTarget{kind: logsBackup, name: "b1"}, logsFrom("", ""), false); err != nil {
			t.Fatal(err)
		}
		if want := "ERROR backup failed error=\"bucket \\\"x\\\" does not exist\"\n"; te.out.String() != want {
			t.Errorf("printed %q; want %q", te.out.String(), want)
		}
		if note := te.errOut.String(); !strings.Contains(note, "pod b1-backup-abcde (attempt 3) of Job b1-backup") || !strings.Contains(note, "at most") {
			t.Errorf("the note says %q", note)
		}
	})

	t.Run("a log that could not be kept says why", func(t *testing.T) {
		b := failed.DeepCopy()
		b.Status.MoverLog = &echov1alpha1.MoverLog{Job: "b1-backup", Unavailable: "the Job has no pod left"}
		te := newTestEnv(t, b)
		if err := te.logs(ctx, logsTarget{kind: logsBackup, name: "b1"}, nil, false); err == nil || !strings.Contains(err.Error(), "no pod left") {
			t.Errorf("got %v", err)
		}
	})

	t.Run("a running restore's live log, of its own pod only", func(t *testing.T) {
		rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1"}, Status: echov1alpha1.EchoRestoreStatus{
			Phase: echov1alpha1.PhaseRunning, Jobs: []echov1alpha1.JobReference{{Name: "r1-inspect", UID: "job-i"}, {Name: "r1-restore", UID: "job-r"}},
			MoverLog: &echov1alpha1.MoverLog{Job: "r1-inspect", JobUID: "job-i", Pod: "r1-inspect-x", Log: "inspect complete\n"}}}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1-restore", UID: "job-r"}}
		label := map[string]string{batchv1.ControllerUidLabel: "job-r"}
		own := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1-restore-own", Labels: label,
			CreationTimestamp: metav1.NewTime(time.Unix(100, 0)),
			OwnerReferences:   []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "r1-restore", UID: "job-r", Controller: ptr.To(true)}}}}
		lookAlike := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1-restore-tenant", Labels: label,
			CreationTimestamp: metav1.NewTime(time.Unix(200, 0))}}
		te := newTestEnv(t, rs, job, own, lookAlike)
		if err := te.logs(ctx, logsTarget{kind: logsRestore, name: "r1"}, logsFrom("r1-restore-own", "downloading\n"), true); err != nil {
			t.Fatal(err)
		}
		if te.out.String() != "downloading\n" || !strings.Contains(te.errOut.String(), "live log of pod r1-restore-own") {
			t.Errorf("printed %q, noted %q", te.out.String(), te.errOut.String())
		}
	})

	t.Run("a copy's kept log, and a copy the backup does not have", func(t *testing.T) {
		b := failed.DeepCopy()
		b.Status.Phase = echov1alpha1.PhaseCompleted
		b.Spec.CopyTo = []echov1alpha1.BackupCopy{{Name: "offsite"}}
		b.Status.Copies = []echov1alpha1.BackupCopyStatus{{Name: "offsite", Phase: echov1alpha1.PhaseFailed, Reason: "StorageError",
			MoverLog: &echov1alpha1.MoverLog{Job: "b1-copy-offsite", Pod: "b1-copy-offsite-x", Attempt: 3,
				Log: `{"level":"ERROR","msg":"copy failed","error":"copy to s3://offsite: connection refused"}` + "\n"}}}
		te := newTestEnv(t, b)
		if err := te.logs(ctx, logsTarget{kind: logsBackup, name: "b1", copy: "offsite"}, nil, false); err != nil {
			t.Fatal(err)
		}
		if want := "ERROR copy failed error=\"copy to s3://offsite: connection refused\"\n"; te.out.String() != want {
			t.Errorf("printed %q; want %q", te.out.String(), want)
		}
		if note := te.errOut.String(); !strings.Contains(note, "Job b1-copy-offsite, kept in the status of copy offsite of EchoBackup b1") {
			t.Errorf("the note says %q", note)
		}
		err := te.logs(ctx, logsTarget{kind: logsBackup, name: "b1", copy: "elsewhere"}, nil, false)
		if err == nil || !strings.Contains(err.Error(), `no copy "elsewhere"; its copies: offsite`) {
			t.Errorf("an unknown copy: %v", err)
		}
	})

	t.Run("a Job of the recorded name but another UID is not read", func(t *testing.T) {
		b := failed.DeepCopy()
		b.Status.Phase = echov1alpha1.PhaseRunning
		b.Status.MoverLog = nil
		impostor := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1-backup", UID: "other"}}
		te := newTestEnv(t, b, impostor)
		if err := te.logs(ctx, logsTarget{kind: logsBackup, name: "b1"}, nil, false); err == nil || !strings.Contains(err.Error(), "no data mover log yet") {
			t.Errorf("got %v", err)
		}
	})
}
