package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// orphanDeleteJob is a delete Job as the operator makes it, for an
// EchoBackup that is gone, signed with the operator's key.
func orphanDeleteJob(t *testing.T, ns, backup string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: backup + "-delete",
			Labels:      map[string]string{echov1alpha1.BackupLabel: backup, chart.ManagedByLabel: echov1alpha1.ManagedBy},
			Annotations: map[string]string{echov1alpha1.BackupUIDAnnotation: "a-gone-uid"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "mover", Image: testMoverImage}}}}},
	}
	signer, err := releasetrust.LoadOrCreateSigner(context.Background(), k8sClient, testOperatorNamespace)
	Expect(err).NotTo(HaveOccurred())
	signer.SignJob(job, "EchoBackup", "a-gone-uid")
	return job
}

// An operator killed right after removing the artifact finalizer of an
// EchoBackup, before removing its finished delete Job, leaves that Job with
// no EchoBackup to reconcile it (test/chaos found it). The Job goes when
// the operator sees it again; one still running is left to finish, and a
// finished one a tenant made under a delete Job's name, labels and
// annotation alike but without the operator's signature, is left alone.
func TestEchoBackupOrphanedDeleteJobIsRemoved(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)

	running := orphanDeleteJob(t, ns, "running-1")
	Expect(k8sClient.Create(ctx, running)).To(Succeed())
	finished := orphanDeleteJob(t, ns, "finished-1")
	Expect(k8sClient.Create(ctx, finished)).To(Succeed())
	finishMoverJob(t, finished, deleteSucceeded, true)
	planted := orphanDeleteJob(t, ns, "planted-1")
	delete(planted.Annotations, releasetrust.JobSignatureAnnotation)
	planted = plantJob(t, planted, deleteSucceeded)

	expectGone(t, finished)
	expectUntouched(t, planted)
	Consistently(func() error {
		return k8sClient.Get(ctx, client.ObjectKeyFromObject(running), &batchv1.Job{})
	}, "1s", interval).Should(Succeed(), "a delete Job still running is left to finish")

	finishMoverJob(t, running, deleteRefused, false)
	expectGone(t, running)
}
