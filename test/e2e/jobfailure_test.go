//go:build linux

package e2e

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/moverrunner"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// heldJobPodNamespace is the namespace whose Job pods KWOK leaves Running
// until a test ends each one, as a kubelet would report it (see
// simcluster.Options.HeldJobPodNamespaces).
const heldJobPodNamespace = "e2e-held-job-pods"

// podEnd is how a held mover pod ends.
type podEnd struct {
	exitCode   int
	message    string
	disruption string // a DisruptionTarget reason, for a pod the cluster stopped
}

// endMoverPod waits for the one Running pod of a Job and ends it.
func endMoverPod(t *testing.T, job *batchv1.Job, end func(pod *corev1.Pod) podEnd) {
	t.Helper()
	ctx := context.Background()
	var pod corev1.Pod
	Eventually(func(g Gomega) {
		pods := jobPods(g, job)
		var running []corev1.Pod
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		g.Expect(running).To(HaveLen(1))
		pod = running[0]
	}, timeout, interval).Should(Succeed())
	e := end(&pod)
	annotations := map[string]string{
		simcluster.JobPodExitCodeAnnotation: strconv.Itoa(e.exitCode),
		simcluster.JobPodMessageAnnotation:  e.message,
	}
	if e.disruption != "" {
		annotations[simcluster.JobPodDisruptionAnnotation] = e.disruption
	}
	patch := client.MergeFrom(pod.DeepCopy())
	pod.Annotations = annotations
	Expect(k8sClient.Patch(ctx, &pod, patch)).To(Succeed())
	// The pod ends; once the operator has read its outcome it removes the
	// Job, and the pod with it, which may happen before this sees the end.
	Eventually(func(g Gomega) corev1.PodPhase {
		got := &corev1.Pod{}
		err := k8sClient.Get(ctx, client.ObjectKeyFromObject(&pod), got)
		if apierrors.IsNotFound(err) {
			return "(deleted)"
		}
		g.Expect(err).NotTo(HaveOccurred())
		return got.Status.Phase
	}, timeout, interval).ShouldNot(Equal(corev1.PodRunning), "pod %s ended", pod.Name)
}

func jobPods(g Gomega, job *batchv1.Job) []corev1.Pod {
	pods := &corev1.PodList{}
	g.Expect(k8sClient.List(context.Background(), pods, client.InNamespace(job.Namespace),
		client.MatchingLabels{batchv1.JobNameLabel: job.Name})).To(Succeed())
	return pods.Items
}

// stoppedBySignal is what a mover stopped by SIGTERM reports: the pod of
// an eviction or a drain.
func stoppedBySignal() podEnd {
	msg, err := moverprotocol.Encode(moverprotocol.Failure{
		Error: "context canceled", Reason: moverprotocol.ReasonCanceled, Retryable: true,
	})
	Expect(err).NotTo(HaveOccurred())
	return podEnd{exitCode: moverprotocol.ExitCode(true), message: string(msg)}
}

// The pods of a backup Job end the ways a cluster ends them, as the kubelet
// reports it: each backup ends as retrying can make it. A pod the cluster
// stopped (DisruptionTarget) or a retryable failure is retried; the
// permanent failure the real data mover reports for refused credentials
// fails the Job at once, with the reason that says what to fix.
// heldEcho is a persistent, Ready Echo in a namespace whose Job pods are
// held (see heldJobPodNamespace), with the credentials of a real S3 server
// and, as its data, a journal a real echo server wrote; mover runs the data
// mover on that data for its Jobs' pods.
type heldEcho struct {
	key     types.NamespacedName
	s3      *s3server.Server
	storage echov1alpha1.BackupStorage
	mover   *heldMover
}

func newHeldEcho(t *testing.T, ns, name, prefix string) heldEcho {
	t.Helper()
	ctx := context.Background()
	h := heldEcho{key: types.NamespacedName{Namespace: ns, Name: name}, s3: s3server.Start(t, "echo-backups")}
	Expect(createNamespace(ctx, ns, map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})).To(Succeed())
	Expect(k8sClient.Create(ctx, h.s3.CredentialsSecret(ns))).To(Succeed())
	h.storage = h.s3.Storage("echo-backups", prefix)
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       echov1alpha1.EchoSpec{Replicas: ptr.To[int32](1), Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}},
	})).To(Succeed())
	waitReady(t, h.key, 1)
	data := t.TempDir()
	writeJournal(t, data, 5)
	h.mover = &heldMover{runner: &moverrunner.Runner{Binary: op.binary, Client: k8sClient, ClaimDir: moverrunner.OneDir(data), WorkDir: t.TempDir()}}
	return h
}

// refusedStorage is the Echo's storage with credentials S3 refuses: a
// Secret of name with the wrong secret key.
func (h heldEcho) refusedStorage(name string) echov1alpha1.BackupStorage {
	wrong := h.s3.CredentialsSecret(h.key.Namespace)
	wrong.Name = name
	wrong.StringData["AWS_SECRET_ACCESS_KEY"] = "not-the-secret-key"
	Expect(k8sClient.Create(context.Background(), wrong)).To(Succeed())
	refused := *h.storage.DeepCopy()
	refused.S3.CredentialsSecretRef.Name = name
	return refused
}

// heldMover runs the data mover for the held pod of a Job and ends the pod
// as the mover ended.
type heldMover struct{ runner *moverrunner.Runner }

// run runs the data mover as pod's container would, and says how it ended.
func (m *heldMover) run(pod *corev1.Pod) podEnd {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := m.runner.Run(ctx, pod.Namespace, &pod.Spec)
	Expect(err).NotTo(HaveOccurred(), "%s", res.Output)
	return podEnd{exitCode: res.ExitCode, message: res.Message}
}

// end runs the data mover for the running pod of job and ends the pod.
func (m *heldMover) end(t *testing.T, job *batchv1.Job) {
	t.Helper()
	endMoverPod(t, job, m.run)
}

func TestMoverJobPodFailures(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	h := newHeldEcho(t, heldJobPodNamespace, "journal", "held")
	ns, echoKey, runMover := h.key.Namespace, h.key, h.mover.run
	backup := func(name string, mutate func(*echov1alpha1.EchoBackup)) (types.NamespacedName, *batchv1.Job) {
		b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: echoKey.Name, Storage: h.storage}}
		if mutate != nil {
			mutate(b)
		}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		return client.ObjectKeyFromObject(b), waitJobNamed(t, ns, name+"-backup")
	}

	t.Run("evicted, then retried without counting against the retries", func(t *testing.T) {
		RegisterTestingT(t)
		key, job := backup("evicted", nil)
		endMoverPod(t, job, func(*corev1.Pod) podEnd {
			e := stoppedBySignal()
			e.disruption = "EvictionByEvictionAPI"
			return e
		})
		endMoverPod(t, job, func(pod *corev1.Pod) podEnd {
			Expect(getJob(Default, job).Status.Failed).To(BeZero(), "an eviction is not the mover's failure")
			return runMover(pod)
		})
		waitBackupComplete(t, key)
	})

	t.Run("a retryable failure is retried", func(t *testing.T) {
		RegisterTestingT(t)
		key, job := backup("retried", nil)
		endMoverPod(t, job, func(*corev1.Pod) podEnd { return stoppedBySignal() })
		Consistently(func(g Gomega) {
			b := &echov1alpha1.EchoBackup{}
			g.Expect(k8sClient.Get(ctx, key, b)).To(Succeed())
			g.Expect(meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed)).To(BeNil())
		}, "1s", interval).Should(Succeed(), "a retryable failure does not fail the backup")
		endMoverPod(t, job, func(pod *corev1.Pod) podEnd {
			Expect(getJob(Default, job).Status.Failed).To(BeEquivalentTo(1), "the failure counts against the retries")
			return runMover(pod)
		})
		waitBackupComplete(t, key)
	})

	t.Run("refused credentials fail at once", func(t *testing.T) {
		RegisterTestingT(t)
		refused := h.refusedStorage("wrong-credentials")
		key, job := backup("refused", func(b *echov1alpha1.EchoBackup) { b.Spec.Storage = refused })
		endMoverPod(t, job, func(pod *corev1.Pod) podEnd {
			e := runMover(pod)
			Expect(e.exitCode).To(Equal(moverprotocol.ExitPermanent), "the real data mover: %s", e.message)
			return e
		})
		var failed *metav1.Condition
		Eventually(func(g Gomega) {
			b := &echov1alpha1.EchoBackup{}
			g.Expect(k8sClient.Get(ctx, key, b)).To(Succeed())
			failed = meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed)
			g.Expect(failed).NotTo(BeNil())
		}, timeout, interval).Should(Succeed())
		// Failed with the one pod ended: a retry's pod would be held
		// Running, and the backup could not fail before it ended.
		Expect(failed.Reason).To(Equal(echov1alpha1.BackupReasonCredentialsError))
		Expect(failed.Message).To(ContainSubstring("SignatureDoesNotMatch"))
	})
}

func getJob(g Gomega, job *batchv1.Job) *batchv1.Job {
	got := &batchv1.Job{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(job), got)).To(Succeed())
	return got
}
