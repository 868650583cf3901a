package simcluster

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// heldNamespace is the held Job pod namespace of TestCluster.
const heldNamespace = "simcluster-held"

// checkHeldJobPods runs two Jobs in a held namespace and ends their pods
// as the annotations say: one evicted with a failure, one succeeded.
func checkHeldJobPods(ctx context.Context, g Gomega, cs kubernetes.Interface) {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   heldNamespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	evicted := endHeldJob(ctx, g, cs, "evicted", map[string]string{
		JobPodExitCodeAnnotation: "143", JobPodMessageAnnotation: `{"reason":"Canceled"}`,
		JobPodDisruptionAnnotation: "EvictionByEvictionAPI",
	}, batchv1.JobFailed)
	g.Expect(evicted.Status.Phase).To(Equal(corev1.PodFailed))
	g.Expect(evicted.Status.Conditions).To(ContainElement(And(
		HaveField("Type", corev1.DisruptionTarget), HaveField("Status", corev1.ConditionTrue), HaveField("Reason", "EvictionByEvictionAPI"))))
	g.Expect(evicted.Status.ContainerStatuses[0].State.Terminated).To(And(
		HaveField("ExitCode", BeEquivalentTo(143)), HaveField("Message", `{"reason":"Canceled"}`)))

	succeeded := endHeldJob(ctx, g, cs, "succeeded", map[string]string{JobPodExitCodeAnnotation: "0"}, batchv1.JobComplete)
	g.Expect(succeeded.Status.Phase).To(Equal(corev1.PodSucceeded))
	g.Expect(succeeded.Status.Conditions).NotTo(ContainElement(HaveField("Type", corev1.DisruptionTarget)))
	g.Expect(succeeded.Status.ContainerStatuses[0].State.Terminated.ExitCode).To(BeZero())
}

// endHeldJob runs a Job of one pod, which must stay Running until it is
// annotated, then must end so that the Job reaches the condition want. It
// returns the ended pod.
func endHeldJob(ctx context.Context, g Gomega, cs kubernetes.Interface, name string, annotations map[string]string, want batchv1.JobConditionType) corev1.Pod {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: heldNamespace},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template:     corev1.PodTemplateSpec{Spec: restrictedPodSpec(corev1.RestartPolicyNever)},
		},
	}
	// The namespace's "default" ServiceAccount comes from a controller.
	g.Eventually(func() error {
		_, err := cs.BatchV1().Jobs(heldNamespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())

	pod := runningJobPod(ctx, g, cs, name)
	g.Consistently(func(g Gomega) corev1.PodPhase {
		p, err := cs.CoreV1().Pods(heldNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return p.Status.Phase
	}).WithTimeout(time.Second).Should(Equal(corev1.PodRunning), "a held pod runs until it is ended")
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cs.CoreV1().Pods(heldNamespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Eventually(func(g Gomega) {
		j, err := cs.BatchV1().Jobs(heldNamespace).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(j.Status.Conditions).To(ContainElement(And(HaveField("Type", want), HaveField("Status", corev1.ConditionTrue))))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	ended, err := cs.CoreV1().Pods(heldNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	return *ended
}

// runningJobPod waits for the one Running pod of a Job.
func runningJobPod(ctx context.Context, g Gomega, cs kubernetes.Interface, job string) corev1.Pod {
	var running corev1.Pod
	g.Eventually(func(g Gomega) {
		pods, err := cs.CoreV1().Pods(heldNamespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
		running = pods.Items[0]
	}).WithTimeout(60 * time.Second).Should(Succeed())
	return running
}
