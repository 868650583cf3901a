package controllers

import (
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// checkMoverFailurePolicy checks a mover Job's pod failure policy against
// the mover's exit codes: a disruption is ignored, whatever the exit code;
// a permanent failure fails the Job at once; a retryable one is retried.
func checkMoverFailurePolicy(t *testing.T, job *batchv1.Job) {
	t.Helper()
	p := job.Spec.PodFailurePolicy
	if p == nil || len(p.Rules) != 2 {
		t.Fatalf("pod failure policy = %+v, want two rules", p)
	}
	ignore, fail := p.Rules[0], p.Rules[1]
	if ignore.Action != batchv1.PodFailurePolicyActionIgnore || len(ignore.OnPodConditions) != 1 ||
		ignore.OnPodConditions[0].Type != corev1.DisruptionTarget || ignore.OnPodConditions[0].Status != corev1.ConditionTrue {
		t.Errorf("first rule %+v: a pod the cluster took away must not count against the retries", ignore)
	}
	container := job.Spec.Template.Spec.Containers[0].Name
	codes := fail.OnExitCodes
	if fail.Action != batchv1.PodFailurePolicyActionFailJob || codes == nil || codes.ContainerName == nil || *codes.ContainerName != container ||
		codes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn || !slices.Equal(codes.Values, []int32{moverprotocol.ExitPermanent}) {
		t.Errorf("second rule %+v: exit code %d of container %s must fail the Job at once, and only it", fail, moverprotocol.ExitPermanent, container)
	}
}

// TestMoverPodsCarryTheProxy: every data mover Job passes the operator's
// proxy settings on, beside the storage's credentials.
func TestMoverPodsCarryTheProxy(t *testing.T) {
	proxy := []corev1.EnvVar{{Name: "HTTPS_PROXY", Value: "http://proxy:3128"}}
	m := moverSettings{image: "img", env: proxy}
	for name, job := range moverJobsOf(m) {
		env := job.Spec.Template.Spec.Containers[0].Env
		if !slices.Contains(env, proxy[0]) {
			t.Errorf("the %s Job's mover lacks the proxy: %v", name, env)
		}
		if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == moverprotocol.EnvAccessKeyID }) {
			t.Errorf("the %s Job's mover lost its credentials: %v", name, env)
		}
	}
}
