package controllers

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestBoundLog(t *testing.T) {
	lines := func(n int, line string) string { return strings.Repeat(line+"\n", n) }
	for _, tc := range []struct {
		name          string
		in            string
		limit         int
		want          string
		wantTruncated bool
	}{
		{name: "a short log is kept whole", in: "one\ntwo\n", limit: 64, want: "one\ntwo\n"},
		{name: "a log of exactly the limit is kept whole", in: "0123456789\n", limit: 11, want: "0123456789\n"},
		{name: "the last lines are kept, from a line's start", in: "first line\nsecond\nthird\n", limit: 15, want: "second\nthird\n", wantTruncated: true},
		{name: "a cut right after a newline keeps the whole line", in: "aaaa\nbbbb\n", limit: 5, want: "bbbb\n", wantTruncated: true},
		{name: "a log without a final newline keeps its last line", in: "aaaa\nbbbb\ncc", limit: 8, want: "bbbb\ncc", wantTruncated: true},
		{name: "a last line longer than the limit is kept as its end", in: "x\n" + strings.Repeat("y", 20), limit: 8, want: strings.Repeat("y", 8), wantTruncated: true},
		{name: "a cut in a character starts at the next one", in: "x\n" + strings.Repeat("é", 10), limit: 7, want: "ééé", wantTruncated: true},
		{name: "invalid UTF-8 is replaced, within the limit", in: "a\xffb\n", limit: 64, want: "a\uFFFDb\n"},
		{name: "the bound holds for many lines", in: lines(1000, "backup step"), limit: echov1alpha1.MoverLogLimit,
			want: lines(echov1alpha1.MoverLogLimit/len("backup step\n"), "backup step"), wantTruncated: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, truncated := boundLog(tc.in, tc.limit)
			if got != tc.want || truncated != tc.wantTruncated {
				t.Errorf("boundLog(%q, %d) = %q, %v; want %q, %v", tc.in, tc.limit, got, truncated, tc.want, tc.wantTruncated)
			}
			if len(got) > tc.limit || !utf8.ValidString(got) {
				t.Errorf("kept %d bytes (limit %d), valid UTF-8: %v", len(got), tc.limit, utf8.ValidString(got))
			}
		})
	}
}

func TestKeepLogTail(t *testing.T) {
	t.Run("a log shorter than the tail asked for is whole", func(t *testing.T) {
		got, truncated, err := keepLogTail(strings.NewReader("a\nb\n"), 1024, 10, 64)
		if err != nil || got != "a\nb\n" || truncated {
			t.Errorf("got %q, %v, %v", got, truncated, err)
		}
	})
	t.Run("as many lines as the tail asked for may have had more before", func(t *testing.T) {
		_, truncated, err := keepLogTail(strings.NewReader("a\nb\nc\n"), 1024, 3, 64)
		if err != nil || !truncated {
			t.Errorf("truncated %v, %v; want true", truncated, err)
		}
	})
	t.Run("no more than the fetch limit is read", func(t *testing.T) {
		r := &countingReader{r: strings.NewReader(strings.Repeat("z", 1<<20))}
		got, truncated, err := keepLogTail(r, 4096, 10, 64)
		if err != nil || !truncated || len(got) != 64 {
			t.Errorf("got %d bytes, %v, %v", len(got), truncated, err)
		}
		if r.n > 4096 {
			t.Errorf("read %d bytes of a 1 MiB log; want at most 4096", r.n)
		}
	})
	t.Run("a broken stream is an error", func(t *testing.T) {
		if _, _, err := keepLogTail(io.MultiReader(strings.NewReader("a\n"), errReader{}), 1024, 10, 64); err == nil {
			t.Error("want an error")
		}
	})
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestMoverLogPod(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1-backup", UID: "job-uid"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: moverPodSpec()}}}
	failedJob := job.DeepCopy()
	failedJob.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}
	at := func(sec int) metav1.Time { return metav1.NewTime(time.Unix(int64(1000+sec), 0)) }
	pod := func(name string, created int, phase corev1.PodPhase, mutate ...func(*corev1.Pod)) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: at(created),
			OwnerReferences: []metav1.OwnerReference{jobOwner("job-uid")}}, Spec: moverPodSpec(), Status: corev1.PodStatus{Phase: phase}}
		for _, m := range mutate {
			m(&p)
		}
		return p
	}
	lookAlike := func(p *corev1.Pod) { p.OwnerReferences = []metav1.OwnerReference{jobOwner("other-uid")} }
	otherRun := func(p *corev1.Pod) { p.Spec.Containers[0].Args = []string{"sh", "-c", "echo all good"} }
	for _, tc := range []struct {
		name        string
		job         *batchv1.Job
		pods        []corev1.Pod
		wantPod     string
		wantAttempt int32
	}{
		{name: "no pod", job: job},
		{name: "the last attempt of a completed Job", job: job,
			pods:    []corev1.Pod{pod("p2", 2, corev1.PodSucceeded), pod("p1", 1, corev1.PodFailed)},
			wantPod: "p2", wantAttempt: 2},
		{name: "the last failed attempt of a failed Job", job: failedJob,
			pods:    []corev1.Pod{pod("p1", 1, corev1.PodFailed), pod("p2", 2, corev1.PodFailed), pod("p3", 3, corev1.PodPending)},
			wantPod: "p2", wantAttempt: 2},
		{name: "a failed Job without a failed pod: its last", job: failedJob,
			pods: []corev1.Pod{pod("p1", 1, corev1.PodRunning)}, wantPod: "p1", wantAttempt: 1},
		{name: "a look-alike pod of another controller is not read", job: failedJob,
			pods:    []corev1.Pod{pod("p1", 1, corev1.PodFailed), pod("tenant", 9, corev1.PodFailed, lookAlike)},
			wantPod: "p1", wantAttempt: 1},
		{name: "a pod the Job adopted that runs something else is not read", job: job,
			pods:    []corev1.Pod{pod("p1", 1, corev1.PodSucceeded), pod("adopted", 9, corev1.PodSucceeded, otherRun)},
			wantPod: "p1", wantAttempt: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, attempt := moverLogPod(tc.pods, tc.job)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.wantPod || attempt != tc.wantAttempt {
				t.Errorf("got pod %q attempt %d; want %q attempt %d", name, attempt, tc.wantPod, tc.wantAttempt)
			}
		})
	}
}

// fakePodLogs serves the logs it holds, by pod name, and counts the reads.
type fakePodLogs struct {
	logs  map[string]string
	err   error
	reads int
}

func (f *fakePodLogs) PodLog(_ context.Context, _, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	f.reads++
	if opts.Container != "mover" || opts.TailLines == nil || opts.LimitBytes == nil {
		return nil, errors.New("unbounded read of the wrong container")
	}
	if f.err != nil {
		return nil, f.err
	}
	text, ok := f.logs[pod]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, pod)
	}
	return io.NopCloser(strings.NewReader(text)), nil
}

func TestEnsureMoverLog(t *testing.T) {
	ctx := context.Background()
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1-backup", UID: "job-uid"},
		Spec:   batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: moverPodSpec()}},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1-backup-x", Labels: map[string]string{batchv1.ControllerUidLabel: "job-uid"},
		OwnerReferences: []metav1.OwnerReference{jobOwner("job-uid")}}, Spec: moverPodSpec(), Status: corev1.PodStatus{Phase: corev1.PodFailed}}
	withPod := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(pod).Build()
	empty := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	const log = `{"msg":"backup failed","error":"access denied"}` + "\n"

	t.Run("the log of the Job's pod is kept, once", func(t *testing.T) {
		logs := &fakePodLogs{logs: map[string]string{"b1-backup-x": log}}
		r := moverLogReader{cache: empty, api: withPod, logs: logs}
		var kept *echov1alpha1.MoverLog
		r.ensureMoverLog(ctx, &kept, job)
		want := &echov1alpha1.MoverLog{Job: "b1-backup", JobUID: "job-uid", Pod: "b1-backup-x", Attempt: 1, Log: log}
		if kept == nil || *kept != *want {
			t.Fatalf("kept %+v; want %+v", kept, want)
		}
		r.ensureMoverLog(ctx, &kept, job)
		if logs.reads != 1 {
			t.Errorf("%d reads; a finished Job's log is read once", logs.reads)
		}
	})
	t.Run("another Job of the same name is read afresh", func(t *testing.T) {
		logs := &fakePodLogs{logs: map[string]string{"b1-backup-x": log}}
		kept := &echov1alpha1.MoverLog{Job: "b1-backup", JobUID: types.UID("earlier-uid"), Log: "earlier"}
		moverLogReader{cache: withPod, api: withPod, logs: logs}.ensureMoverLog(ctx, &kept, job)
		if kept.JobUID != "job-uid" || kept.Log != log {
			t.Errorf("kept %+v", kept)
		}
	})
	t.Run("a pod gone is recorded as such", func(t *testing.T) {
		var kept *echov1alpha1.MoverLog
		moverLogReader{cache: empty, api: empty, logs: &fakePodLogs{}}.ensureMoverLog(ctx, &kept, job)
		if kept == nil || kept.Unavailable == "" || kept.Pod != "" || kept.Log != "" {
			t.Errorf("kept %+v; want the log unavailable", kept)
		}
	})
	t.Run("a log the pod no longer has is recorded as unavailable", func(t *testing.T) {
		var kept *echov1alpha1.MoverLog
		moverLogReader{cache: withPod, api: withPod, logs: &fakePodLogs{}}.ensureMoverLog(ctx, &kept, job)
		if kept == nil || !strings.Contains(kept.Unavailable, "gone") || kept.Pod != "b1-backup-x" {
			t.Errorf("kept %+v; want the log unavailable, the pod gone", kept)
		}
	})
	t.Run("a node that does not serve logs leaves it unavailable, bounded", func(t *testing.T) {
		var kept *echov1alpha1.MoverLog
		logs := &fakePodLogs{err: errors.New(strings.Repeat("no route to host ", 200))}
		moverLogReader{cache: withPod, api: withPod, logs: logs}.ensureMoverLog(ctx, &kept, job)
		if kept == nil || kept.Unavailable == "" || len(kept.Unavailable) > maxUnavailableLen {
			t.Errorf("kept %+v", kept)
		}
	})
	t.Run("without a reader nothing is kept", func(t *testing.T) {
		var kept *echov1alpha1.MoverLog
		moverLogReader{cache: withPod, api: withPod}.ensureMoverLog(ctx, &kept, job)
		if kept != nil {
			t.Errorf("kept %+v", kept)
		}
	})
}
