package controllers

import (
	"bytes"
	"encoding/json"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// moverResult is what the data mover writes as its termination message,
// for any of its subcommands (see cmd/manager/datamover.go).
type moverResult struct {
	Size      int64  `json:"size"`
	Checksum  string `json:"checksum"`
	Location  string `json:"location"`
	Files     int    `json:"files"`
	Error     string `json:"error"`
	Reason    string `json:"reason"`
	Retryable bool   `json:"retryable"`

	// inspect only: how many of the files are data, and the backed-up
	// Echo, as JSON or, when that would not fit, gzipped and base64-encoded;
	// EchoOmitted when even that would not fit.
	DataFiles   int             `json:"dataFiles"`
	Echo        json.RawMessage `json:"echo,omitempty"`
	EchoGzip    string          `json:"echoGzip,omitempty"`
	EchoOmitted bool            `json:"echoOmitted,omitempty"`
}

// backupFailureReason maps a data mover error reason to a condition reason.
func backupFailureReason(moverReason string) string {
	switch moverReason {
	case "AccessDenied":
		return echov1alpha1.BackupReasonCredentialsError
	case "":
		return echov1alpha1.BackupReasonJobFailed
	default:
		return echov1alpha1.BackupReasonStorageError
	}
}

// jobFinished reads the terminal conditions of a Job.
func jobFinished(job *batchv1.Job) (complete, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobFailed:
			failed = true
		}
	}
	return complete, failed
}

func jobFailureMessage(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			if c.Message != "" {
				return c.Message
			}
			return c.Reason
		}
	}
	return "unknown"
}

// jobFinishTime is when a Job reached its terminal condition.
func jobFinishTime(job *batchv1.Job) time.Time {
	if job.Status.CompletionTime != nil {
		return job.Status.CompletionTime.Time
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// terminationMessage is the termination message of a pod's mover
// container, and when it terminated.
func terminationMessage(pod *corev1.Pod) (string, time.Time, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != moverContainer || cs.State.Terminated == nil || cs.State.Terminated.Message == "" {
			continue
		}
		return cs.State.Terminated.Message, cs.State.Terminated.FinishedAt.Time, true
	}
	return "", time.Time{}, false
}

// setCondition sets a condition, keeping its transition time when its
// status holds.
func setCondition(conds *[]metav1.Condition, generation int64, condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: truncateMessage(message), ObservedGeneration: generation,
	})
}

func truncateMessage(s string) string {
	const limit = 4096
	if len(s) <= limit {
		return s
	}
	return s[:limit-3] + "..."
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// equalJSON compares two values as the API server would store them.
func equalJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
