package kubectlecho

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/names"
)

// moverContainer is the data mover's container in every backup and restore
// Job's pod.
const moverContainer = "mover"

// maxLogLine is the longest line printed as one; a longer one is printed
// in pieces.
const maxLogLine = 64 << 10

// podLogs streams the log of a pod's container (pods/log).
type podLogs func(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error)

func newLogsCommand(connect func() (*env, error), flags *genericclioptions.ConfigFlags) *cobra.Command {
	var raw bool
	var copyName string
	cmd := &cobra.Command{
		Use:   "logs [backup/]NAME | restore/NAME",
		Short: "Print the data mover's log of a backup or restore: the one kept in its status, or the live one while its Job runs",
		Long: "Print the data mover's log of an EchoBackup (NAME or backup/NAME) or an EchoRestore (restore/NAME). " +
			"Once the backup or restore has finished, its Job is gone: the log printed is the end of the mover's log, " +
			"which the operator keeps in the object's status.moverLog. While the Job still runs, its pod's live log is printed instead " +
			"(which needs get on pods/log). --copy COPY prints the log of the backup's copy of that name (spec.copyTo) instead. " +
			"The mover's JSON lines are printed as text unless --raw.",
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			target, err := parseLogsTarget(args[0])
			if err != nil {
				return err
			}
			if copyName != "" && target.kind != logsBackup {
				return fmt.Errorf("--copy names a copy of a backup: give NAME or backup/NAME")
			}
			target.copy = copyName
			return run(connect, func(ctx context.Context, e *env) error {
				return e.logs(ctx, target, clientsetLogs(flags), raw)
			})
		},
	}
	cmd.Flags().BoolVar(&raw, "raw", false, "print the mover's log lines as written (JSON)")
	cmd.Flags().StringVar(&copyName, "copy", "", "the name of one of the backup's copies (spec.copyTo): print the log of its copy Job")
	return cmd
}

// clientsetLogs reads pod logs with the user's kubeconfig.
func clientsetLogs(flags *genericclioptions.ConfigFlags) podLogs {
	return func(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
		config, err := flags.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		c, err := kubernetes.NewForConfig(config)
		if err != nil {
			return nil, err
		}
		return c.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
	}
}

// The kinds whose log logs prints.
const (
	logsBackup  = "EchoBackup"
	logsRestore = "EchoRestore"
)

// logsTarget is what logs prints the log of: a backup or restore, or one
// copy of a backup.
type logsTarget struct {
	kind, name string
	copy       string
}

// parseLogsTarget reads NAME, backup/NAME or restore/NAME (the kinds'
// plural and full names too).
func parseLogsTarget(arg string) (t logsTarget, err error) {
	var kind, name string
	prefix, name, found := strings.Cut(arg, "/")
	if !found {
		prefix, name = "backup", arg
	}
	switch strings.ToLower(prefix) {
	case "backup", "backups", "echobackup", "echobackups", "ecb":
		kind = logsBackup
	case "restore", "restores", "echorestore", "echorestores":
		kind = logsRestore
	default:
		return logsTarget{}, fmt.Errorf("%q: give NAME or backup/NAME for an EchoBackup, restore/NAME for an EchoRestore", arg)
	}
	if name == "" || strings.Contains(name, "/") {
		return logsTarget{}, fmt.Errorf("%q: give NAME or backup/NAME for an EchoBackup, restore/NAME for an EchoRestore", arg)
	}
	return logsTarget{kind: kind, name: name}, nil
}

// moverRun is what logs reads of a backup or restore.
type moverRun struct {
	kind, name string
	finished   bool
	state      string // the phase and reason, for a backup or restore without a log
	jobs       []echov1alpha1.JobReference
	kept       *echov1alpha1.MoverLog
}

// getMoverRun reads the backup or restore.
func (e *env) getMoverRun(ctx context.Context, t logsTarget) (*moverRun, error) {
	key := client.ObjectKey{Namespace: e.namespace, Name: t.name}
	r := &moverRun{kind: t.kind, name: t.name}
	var st struct {
		phase      echov1alpha1.Phase
		reason, er string
		conditions []metav1.Condition
	}
	if t.kind == logsRestore {
		rs := &echov1alpha1.EchoRestore{}
		if err := e.client.Get(ctx, key, rs); err != nil {
			return nil, err
		}
		r.jobs, r.kept = rs.Status.Jobs, rs.Status.MoverLog
		st.phase, st.reason, st.er, st.conditions = rs.Status.Phase, rs.Status.Reason, rs.Status.Error, rs.Status.Conditions
	} else {
		b := &echov1alpha1.EchoBackup{}
		if err := e.client.Get(ctx, key, b); err != nil {
			return nil, err
		}
		r.jobs, r.kept = b.Status.Jobs, b.Status.MoverLog
		st.phase, st.reason, st.er, st.conditions = b.Status.Phase, b.Status.Reason, b.Status.Error, b.Status.Conditions
		if t.copy != "" {
			c, err := backupCopy(b, t.copy)
			if err != nil {
				return nil, err
			}
			r.kind, r.name = "copy", t.copy+" of EchoBackup "+t.name
			r.jobs = copyJobs(b, t.copy)
			r.kept, st.phase, st.reason, st.er = c.MoverLog, c.Phase, c.Reason, c.Message
		}
	}
	r.finished = st.phase == echov1alpha1.PhaseCompleted || st.phase == echov1alpha1.PhaseFailed
	r.state = strings.TrimSpace(fmt.Sprintf("%s %s", orNone(string(st.phase)), st.reason))
	if st.er != "" {
		r.state += ": " + st.er
	}
	return r, nil
}

// backupCopy is the status of the copy name of b: Pending until the
// backup completed, when b names the copy but has no status for it yet.
func backupCopy(b *echov1alpha1.EchoBackup, name string) (echov1alpha1.BackupCopyStatus, error) {
	if i := slices.IndexFunc(b.Status.Copies, func(c echov1alpha1.BackupCopyStatus) bool { return c.Name == name }); i >= 0 {
		return b.Status.Copies[i], nil
	}
	if slices.ContainsFunc(b.Spec.CopyTo, func(c echov1alpha1.BackupCopy) bool { return c.Name == name }) {
		return echov1alpha1.BackupCopyStatus{Name: name, Phase: echov1alpha1.PhasePending, Reason: echov1alpha1.CopyReasonWaitingForBackup}, nil
	}
	names := make([]string, 0, len(b.Spec.CopyTo))
	for _, c := range b.Spec.CopyTo {
		names = append(names, c.Name)
	}
	return echov1alpha1.BackupCopyStatus{}, fmt.Errorf("EchoBackup %s has no copy %q; its copies: %s", b.Name, name, orNone(strings.Join(names, ", ")))
}

// copyJobs are the recorded Jobs of b that copy it to the copy name.
func copyJobs(b *echov1alpha1.EchoBackup, name string) []echov1alpha1.JobReference {
	job := names.CopyJob(b.Name, name)
	var jobs []echov1alpha1.JobReference
	for _, ref := range b.Status.Jobs {
		if ref.Name == job {
			jobs = append(jobs, ref)
		}
	}
	return jobs
}

// logs prints the mover's log of a backup or restore: live while one of
// its Jobs runs, else the one kept in its status.
func (e *env) logs(ctx context.Context, t logsTarget, logs podLogs, raw bool) error {
	r, err := e.getMoverRun(ctx, t)
	if err != nil {
		return err
	}
	if !r.finished {
		if job, err := e.runningJob(ctx, r.jobs); err != nil || job != nil {
			if err != nil {
				return err
			}
			return e.printLiveLog(ctx, r, job, logs, raw)
		}
	}
	return e.printKeptLog(r, raw)
}

// runningJob is the newest of the recorded Jobs that exists, is the one
// recorded (by UID) and has not finished; nil when none runs.
func (e *env) runningJob(ctx context.Context, jobs []echov1alpha1.JobReference) (*batchv1.Job, error) {
	for _, ref := range slices.Backward(jobs) {
		job := &batchv1.Job{}
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: e.namespace, Name: ref.Name}, job); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if job.UID == ref.UID && !jobFinished(job) {
			return job, nil
		}
	}
	return nil, nil
}

func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// printLiveLog prints the log of the newest pod of a running Job: only of
// a pod the Job controls, by UID; anyone who may create pods can label one
// as the Job's.
func (e *env) printLiveLog(ctx context.Context, r *moverRun, job *batchv1.Job, logs podLogs, raw bool) error {
	pods := &corev1.PodList{}
	if err := e.client.List(ctx, pods, client.InNamespace(e.namespace), client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return err
	}
	var newest *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		owner := metav1.GetControllerOf(p)
		if owner == nil || owner.UID != job.UID {
			continue
		}
		if newest == nil || newest.CreationTimestamp.Before(&p.CreationTimestamp) {
			newest = p
		}
	}
	if newest == nil {
		e.notef("%s %s is running: Job %s has no pod yet\n", r.kind, r.name, job.Name)
		return nil
	}
	e.notef("%s %s is running: the live log of pod %s of Job %s follows\n", r.kind, r.name, newest.Name, job.Name)
	stream, err := logs(ctx, e.namespace, newest.Name, &corev1.PodLogOptions{Container: moverContainer})
	if err != nil {
		return fmt.Errorf("reading the log of pod %s: %w", newest.Name, err)
	}
	defer func() { _ = stream.Close() }() // read-only
	return printLogLines(e.streams.Out, stream, raw)
}

// printKeptLog prints the log kept in the status, or says why there is
// none.
func (e *env) printKeptLog(r *moverRun, raw bool) error {
	k := r.kept
	switch {
	case k == nil && r.finished:
		return fmt.Errorf("%s %s keeps no data mover log (it finished without a Job, or before the operator kept logs): %s", r.kind, r.name, r.state)
	case k == nil:
		return fmt.Errorf("%s %s has no data mover log yet: %s", r.kind, r.name, r.state)
	case k.Unavailable != "":
		return fmt.Errorf("the data mover's log of Job %s of %s %s could not be kept: %s", k.Job, r.kind, r.name, k.Unavailable)
	}
	cut := ""
	if k.Truncated {
		cut = fmt.Sprintf(", its last %d bytes at most", echov1alpha1.MoverLogLimit)
	}
	e.notef("The log of pod %s (attempt %d) of Job %s, kept in the status of %s %s%s:\n", k.Pod, k.Attempt, k.Job, r.kind, r.name, cut)
	return printLogLines(e.streams.Out, strings.NewReader(k.Log), raw)
}

// notef says what is printed, on the error stream: the output is the log
// alone.
func (e *env) notef(format string, args ...any) {
	_, _ = fmt.Fprintf(e.streams.ErrOut, format, terminalSafeArgs(args)...)
}

// printLogLines prints a log line by line, each terminalSafe: the mover
// writes what whoever configured the backup chose (names, endpoints), and
// what the store answered. A JSON line is printed as text
// (formatLogLine) unless raw.
func printLogLines(out io.Writer, r io.Reader, raw bool) error {
	br := bufio.NewReaderSize(r, maxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := string(bytes.TrimRight(line, "\r\n"))
			if !raw {
				text = formatLogLine(text)
			}
			if _, werr := fmt.Fprintln(out, terminalSafe(text)); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil || errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil
		default:
			return fmt.Errorf("reading the log: %w", err)
		}
	}
}

// formatLogLine prints a JSON log record as "time LEVEL message key=value
// ...", in the order written; any other line as it is.
func formatLogLine(line string) string {
	if !strings.HasPrefix(line, "{") {
		return line
	}
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return line
	}
	var head [3]string // time, level, msg
	var attrs []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return line
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return line
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v)
		}
		switch key {
		case "time":
			head[0] = s
		case "level":
			head[1] = s
		case "msg":
			head[2] = s
		default:
			if strings.ContainsAny(s, " \"=") || s == "" {
				s = fmt.Sprintf("%q", s)
			}
			attrs = append(attrs, key+"="+s)
		}
	}
	return strings.Join(slices.DeleteFunc(append(head[:], attrs...), func(s string) bool { return s == "" }), " ")
}
