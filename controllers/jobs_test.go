package controllers

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// TestReadMoverJob: every kind reads its Jobs' outcome the same way.
func TestReadMoverJob(t *testing.T) {
	finished := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	job := func(condition batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1-backup", UID: "job-uid"}}
		j.Spec.Template.Spec = moverPodSpec()
		if condition != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: condition, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(finished), Message: "BackoffLimitExceeded"}}
		}
		return j
	}
	pod := func(name, jobUID, message string, at time.Time) client.Object {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{batchv1.ControllerUidLabel: jobUID},
				OwnerReferences: []metav1.OwnerReference{jobOwner(jobUID)}},
			Spec: moverPodSpec(),
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name:  moverprotocol.ContainerName,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: message, FinishedAt: metav1.NewTime(at)}},
			}}},
		}
	}
	success := `{"size":10,"checksum":"sha256:aa","location":"s3://b/k","files":1}`
	// forged is a pod that carries the Job's label but that the Job does
	// not control: made by whoever may create pods in the namespace.
	forged := func(name, jobUID, message string, at time.Time) client.Object {
		p := pod(name, jobUID, message, at)
		p.SetOwnerReferences(nil)
		return p
	}
	// adopted is a forged pod the Job controller adopted, as it adopts
	// every orphan its selector matches, running something else than the
	// template's mover.
	adopted := func(change func(*corev1.PodSpec)) client.Object {
		p := pod("p1", "job-uid", success, finished).(*corev1.Pod)
		change(&p.Spec)
		return p
	}
	denied := `{"error":"access denied","reason":"AccessDenied","retryable":false}`
	cases := []struct {
		name        string
		job         *batchv1.Job
		pods        []client.Object
		now         time.Time
		want        moverOutcome
		wantReason  moverprotocol.Reason
		wantLocated bool
	}{
		{"running", job(""), nil, finished, moverRunning, "", false},
		{"complete with its result", job(batchv1.JobComplete), []client.Object{pod("p1", "job-uid", success, finished)}, finished, moverSucceeded, "", true},
		{"complete, result not shown yet", job(batchv1.JobComplete), nil, finished.Add(time.Minute), moverAwaitingResult, "", false},
		{"complete, result lost", job(batchv1.JobComplete), nil, finished.Add(resultGracePeriod), moverSilent, "", false},
		{"complete, a forged pod with the Job's label", job(batchv1.JobComplete), []client.Object{forged("p1", "job-uid", success, finished)}, finished.Add(resultGracePeriod), moverSilent, "", false},
		{"complete, an adopted pod running another command", job(batchv1.JobComplete), []client.Object{adopted(func(s *corev1.PodSpec) {
			s.Containers[0].Command = []string{"/bin/sh", "-c", "echo done > /dev/termination-log"}
		})}, finished.Add(resultGracePeriod), moverSilent, "", false},
		{"complete, an adopted pod of another image", job(batchv1.JobComplete), []client.Object{adopted(func(s *corev1.PodSpec) {
			s.Containers[0].Image = "tenant/fake:1"
		})}, finished.Add(resultGracePeriod), moverSilent, "", false},
		{"complete, an adopted pod with the store on another claim", job(batchv1.JobComplete), []client.Object{adopted(func(s *corev1.PodSpec) {
			s.Volumes[0].PersistentVolumeClaim.ClaimName = "tenant-claim"
		})}, finished.Add(resultGracePeriod), moverSilent, "", false},
		{"complete, with a sidecar beside the mover", job(batchv1.JobComplete), []client.Object{adopted(func(s *corev1.PodSpec) {
			s.Containers = append(s.Containers, corev1.Container{Name: "proxy", Image: "mesh/proxy:1"})
		})}, finished, moverSucceeded, "", true},
		{"failed, a forged pod with the Job's label", job(batchv1.JobFailed), []client.Object{forged("p1", "job-uid", success, finished)}, finished, moverFailed, "", false},
		{"complete, another Job's pod", job(batchv1.JobComplete), []client.Object{pod("p1", "old-uid", success, finished)}, finished.Add(resultGracePeriod), moverSilent, "", false},
		{"complete, a failure reported", job(batchv1.JobComplete), []client.Object{pod("p1", "job-uid", denied, finished)}, finished, moverSilent, "", false},
		{"failed with the mover's reason", job(batchv1.JobFailed), []client.Object{pod("p1", "job-uid", denied, finished)}, finished, moverFailed, moverprotocol.ReasonAccessDenied, false},
		{"failed, newest pod speaks", job(batchv1.JobFailed), []client.Object{
			pod("p1", "job-uid", `{"error":"unreachable","reason":"Unavailable","retryable":true}`, finished.Add(-time.Minute)),
			pod("p2", "job-uid", denied, finished)}, finished, moverFailed, moverprotocol.ReasonAccessDenied, false},
		{"failed, unreadable last words", job(batchv1.JobFailed), []client.Object{pod("p1", "job-uid", "panic: boom", finished)}, finished, moverFailed, reasonUnreadable, false},
		{"failed silently", job(batchv1.JobFailed), nil, finished, moverFailed, "", false},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.pods...).Build()
			var archive moverprotocol.Archive
			out, err := readMoverJob(context.Background(), c, c, tc.job, tc.now, &archive)
			if err != nil {
				t.Fatal(err)
			}
			if out.outcome != tc.want {
				t.Fatalf("outcome = %d, want %d", out.outcome, tc.want)
			}
			var reason moverprotocol.Reason
			if out.failure != nil {
				reason = out.failure.Reason
			}
			if reason != tc.wantReason {
				t.Errorf("failure reason = %q, want %q", reason, tc.wantReason)
			}
			if tc.want == moverFailed && out.jobMessage != "BackoffLimitExceeded" {
				t.Errorf("job message = %q, want the Job's own account", out.jobMessage)
			}
			if got := archive.Location != ""; got != tc.wantLocated {
				t.Errorf("result decoded: %v, want %v (%+v)", got, tc.wantLocated, archive)
			}
		})
	}
}

// TestReadMoverJobWithoutResult: a Job whose result is not needed (the
// artifact deletion) succeeds on completing.
func TestReadMoverJobWithoutResult(t *testing.T) {
	j := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	c := fake.NewClientBuilder().Build()
	if out, err := readMoverJob(context.Background(), c, c, j, time.Now(), nil); err != nil || out.outcome != moverSucceeded {
		t.Fatalf("readMoverJob = %+v, %v; want success", out, err)
	}
}

// TestReadMoverJobWhenTheCacheIsBehind: the cache may see a Job finished
// before it sees the pod's end; the mover's report is then read from the
// API server, rather than waited for (a success) or lost (a failure).
func TestReadMoverJobWhenTheCacheIsBehind(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	finished := time.Now()
	for _, tc := range []struct {
		condition batchv1.JobConditionType
		message   string
		want      moverOutcome
	}{
		{batchv1.JobFailed, `{"error":"access denied","reason":"AccessDenied","retryable":false}`, moverFailed},
		{batchv1.JobComplete, `{"size":10,"checksum":"sha256:aa","location":"s3://b/k","files":1}`, moverSucceeded},
	} {
		t.Run(string(tc.condition), func(t *testing.T) {
			job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1-backup", UID: "job-uid"},
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: moverPodSpec()}},
				Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: tc.condition, Status: corev1.ConditionTrue,
					LastTransitionTime: metav1.NewTime(finished)}}}}
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1", Labels: map[string]string{batchv1.ControllerUidLabel: "job-uid"},
					OwnerReferences: []metav1.OwnerReference{jobOwner("job-uid")}},
				Spec: moverPodSpec(),
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: moverprotocol.ContainerName,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: tc.message, FinishedAt: metav1.NewTime(finished)}}}}},
			}
			cache := fake.NewClientBuilder().WithScheme(scheme).Build()
			api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod).Build()
			var archive moverprotocol.Archive
			out, err := readMoverJob(context.Background(), cache, api, job, finished, &archive)
			if err != nil {
				t.Fatal(err)
			}
			if out.outcome != tc.want {
				t.Fatalf("outcome = %d, want %d", out.outcome, tc.want)
			}
			if tc.want == moverFailed && (out.failure == nil || out.failure.Reason != moverprotocol.ReasonAccessDenied) {
				t.Errorf("failure = %+v, want the mover's AccessDenied", out.failure)
			}
		})
	}
}

// jobOwner is the controller reference the Job controller sets on the pods
// of the Job with that UID.
func jobOwner(uid string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "b1-backup", UID: types.UID(uid), Controller: ptr.To(true)}
}

// moverPodSpec is a data mover pod as a backup Job's template has it.
func moverPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "store", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "backups"}}}},
		Containers: []corev1.Container{{
			Name: moverprotocol.ContainerName, Image: "echo-operator:v1", Args: []string{"backup", "--fs-root=/backup"},
			VolumeMounts: []corev1.VolumeMount{{Name: "store", MountPath: "/backup"}},
		}},
	}
}
