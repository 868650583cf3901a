package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// The data mover's log, kept in the status of the backup or restore whose
// Job ran it: read once, when the outcome of the Job is recorded and
// before the Job is deleted, and bounded by echov1alpha1.MoverLogLimit.

const (
	// moverLogTailLines is how many of the mover's last lines are asked
	// for: a mover writes a line per step, so the kept bytes come first.
	moverLogTailLines = int64(200)
	// moverLogFetchLimit bounds the bytes one read transfers and holds,
	// whatever the lines are like.
	moverLogFetchLimit = int64(64 << 10)
	// moverLogReadTimeout bounds one read: a node that does not answer
	// leaves the log unavailable rather than holding up the outcome.
	moverLogReadTimeout = 5 * time.Second
	// maxUnavailableLen bounds the reason a log could not be read.
	maxUnavailableLen = 1024
)

// PodLogReader reads the log of a pod (pods/log).
type PodLogReader interface {
	PodLog(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error)
}

// ClientsetPodLogs reads pod logs through the API server with c.
func ClientsetPodLogs(c kubernetes.Interface) PodLogReader { return clientsetPodLogs{c: c} }

type clientsetPodLogs struct{ c kubernetes.Interface }

func (l clientsetPodLogs) PodLog(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return l.c.CoreV1().Pods(namespace).GetLogs(pod, opts).Stream(ctx)
}

// moverLogReader reads the mover's log of a finished Job: its pods from the
// cache and, when the cache shows none of them, from the API server (api);
// the log through logs, nil reading none.
type moverLogReader struct {
	cache, api client.Reader
	logs       PodLogReader
}

// ensureMoverLog records in *kept the mover's log of job, which has just
// finished, unless *kept already holds the log of that very Job: one read
// per finished Job, however often its outcome is looked at.
func (m moverLogReader) ensureMoverLog(ctx context.Context, kept **echov1alpha1.MoverLog, job *batchv1.Job) {
	if m.logs == nil || moverLogOf(*kept, job) {
		return
	}
	*kept = m.read(ctx, job)
}

// moverLogOf says whether kept is the log of job.
func moverLogOf(kept *echov1alpha1.MoverLog, job *batchv1.Job) bool {
	return kept != nil && kept.Job == job.Name && kept.JobUID == job.UID
}

// read reads the mover's log of job: of the pod moverLogPod picks among the
// Job's own pods. A log that cannot be read is recorded as unavailable,
// with why: the outcome never waits for it.
func (m moverLogReader) read(ctx context.Context, job *batchv1.Job) *echov1alpha1.MoverLog {
	kept := &echov1alpha1.MoverLog{Job: job.Name, JobUID: job.UID}
	pods, err := m.jobPods(ctx, job)
	if err != nil {
		kept.Unavailable = unavailable(err.Error())
		return kept
	}
	pod, attempt := moverLogPod(pods, job)
	if pod == nil {
		kept.Unavailable = "the Job has no pod left: its log went with it"
		return kept
	}
	kept.Pod, kept.Attempt = pod.Name, attempt
	text, truncated, err := m.readPodLog(ctx, pod)
	if err != nil {
		log.FromContext(ctx).Info("The data mover's log could not be read", "job", job.Name, "pod", pod.Name, "error", err.Error())
		kept.Unavailable = unavailable(err.Error())
		return kept
	}
	kept.Log, kept.Truncated = text, truncated
	return kept
}

// jobPods lists the pods of job, from the cache, or the API server when
// the cache holds none that is the Job's own.
func (m moverLogReader) jobPods(ctx context.Context, job *batchv1.Job) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	for _, c := range []client.Reader{m.cache, m.api} {
		list := &corev1.PodList{}
		if err := c.List(ctx, list, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
			return nil, fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
		}
		if pods = list.Items; slices.ContainsFunc(pods, func(p corev1.Pod) bool { return genuineMoverPod(&p, job) }) {
			break
		}
	}
	return pods, nil
}

// readPodLog reads the end of the mover container's log of pod, bounded.
func (m moverLogReader) readPodLog(ctx context.Context, pod *corev1.Pod) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, moverLogReadTimeout)
	defer cancel()
	stream, err := m.logs.PodLog(ctx, pod.Namespace, pod.Name, &corev1.PodLogOptions{
		Container: moverprotocol.ContainerName, TailLines: ptr.To(moverLogTailLines), LimitBytes: ptr.To(moverLogFetchLimit)})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", false, errors.New("the pod is gone: its log went with it")
		}
		return "", false, fmt.Errorf("reading the log of pod %s: %w", pod.Name, err)
	}
	defer func() { _ = stream.Close() }() // read-only
	return keepLogTail(stream, moverLogFetchLimit, moverLogTailLines, echov1alpha1.MoverLogLimit)
}

// keepLogTail reads at most fetchLimit bytes of a log that was asked for
// its last tailLines lines, and keeps the last limit bytes of it
// (boundLog). truncated says lines were left out: cut here, or possibly
// before the tail that was asked for.
func keepLogTail(r io.Reader, fetchLimit, tailLines int64, limit int) (string, bool, error) {
	raw, err := io.ReadAll(io.LimitReader(r, fetchLimit))
	if err != nil {
		return "", false, fmt.Errorf("reading the log: %w", err)
	}
	text, truncated := boundLog(string(raw), limit)
	full := int64(len(raw)) >= fetchLimit || int64(strings.Count(string(raw), "\n")) >= tailLines
	return text, truncated || full, nil
}

// boundLog keeps the end of a log within limit bytes, as valid UTF-8: its
// last lines, from the start of a line. A last line longer than limit is
// kept as its last limit bytes, from the start of a character. truncated
// says anything was left out.
func boundLog(s string, limit int) (kept string, truncated bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= limit {
		return s, false
	}
	start := len(s) - limit
	if s[start-1] == '\n' {
		return s[start:], true
	}
	tail := s[start:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)-1 {
		return tail[i+1:], true
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return tail, true
}

// moverLogPod picks the pod whose log tells what job came to, among its
// pods: the last attempt (by creation) or, for a failed Job, the last
// attempt that failed; attempt is its place among them, from 1. Only the
// Job's own pods count (genuineMoverPod): anyone who may create pods can
// label one as the Job's.
func moverLogPod(pods []corev1.Pod, job *batchv1.Job) (pod *corev1.Pod, attempt int32) {
	var own []*corev1.Pod
	for i := range pods {
		if genuineMoverPod(&pods[i], job) {
			own = append(own, &pods[i])
		}
	}
	slices.SortStableFunc(own, func(a, b *corev1.Pod) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	_, failed := jobFinished(job)
	for i := len(own) - 1; i >= 0; i-- {
		if !failed || own[i].Status.Phase == corev1.PodFailed {
			return own[i], int32(i + 1)
		}
	}
	if len(own) > 0 {
		return own[len(own)-1], int32(len(own))
	}
	return nil, 0
}

// unavailable bounds why a log could not be read.
func unavailable(why string) string {
	if len(why) <= maxUnavailableLen {
		return why
	}
	cut := maxUnavailableLen - len("…")
	for cut > 0 && !utf8.RuneStart(why[cut]) {
		cut--
	}
	return why[:cut] + "…"
}
