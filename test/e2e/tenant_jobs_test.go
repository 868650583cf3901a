//go:build linux

package e2e

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	echochart "github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// plantedJobNamespace is where a tenant creates a Job under the name of a
// backup's Job before the backup: its Job pods are held, so that the
// tenant's pod ends with the report it chose.
const plantedJobNamespace = "e2e-planted-job"

// TestHostileTenantPlantedBackupJob: a tenant with the namespace's edit
// role creates the Job `<backup>-backup` first, with the operator's labels,
// and lets it complete with a report of a stored archive. The real manager
// reports no success: the backup fails (JobNotOwned) naming the Job, which
// it leaves alone; once the Job is deleted as the message says, a new
// backup runs its own Job and records it.
func TestHostileTenantPlantedBackupJob(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)
	h := newHeldEcho(t, plantedJobNamespace, "planted", "planted")
	tn := tenantOf(t, plantedJobNamespace)
	ns := h.key.Namespace

	report, err := moverprotocol.Encode(moverprotocol.Archive{Size: 1, Checksum: "sha256:" + strings.Repeat("0", 64),
		Location: "s3://tenant/fake", Files: 1})
	Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{echochart.ManagedByLabel: echov1alpha1.ManagedBy, echochart.InstanceLabel: h.key.Name,
		echochart.ComponentLabel: "data-mover", echov1alpha1.BackupLabel: "b1"}
	planted := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b1-backup", Labels: labels},
		Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels,
				// As the kubelet would report the tenant's container, which
				// writes a stored archive to its termination log.
				Annotations: map[string]string{simcluster.JobPodExitCodeAnnotation: "0", simcluster.JobPodMessageAnnotation: string(report)}},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{restrictedContainer(moverprotocol.ContainerName)}},
		}},
	}
	Expect(tn.c.Create(ctx, planted)).To(Succeed())
	Eventually(func(g Gomega) []batchv1.JobCondition {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(planted), planted)).To(Succeed())
		return planted.Status.Conditions
	}, timeout, interval).Should(ContainElement(And(HaveField("Type", batchv1.JobComplete), HaveField("Status", corev1.ConditionTrue))),
		"the tenant's Job completes")

	key := types.NamespacedName{Namespace: ns, Name: "b1"}
	Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: h.key.Name, Storage: h.storage}})).To(Succeed())
	Eventually(func(g Gomega) {
		b := &echov1alpha1.EchoBackup{}
		g.Expect(k8sClient.Get(ctx, key, b)).To(Succeed())
		failed := meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed)
		g.Expect(failed).NotTo(BeNil())
		g.Expect(failed.Reason).To(Equal(echov1alpha1.ReasonJobNotOwned))
		g.Expect(failed.Message).To(ContainSubstring("Job b1-backup in namespace " + ns))
		g.Expect(meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeNil())
		g.Expect(b.Status.Location).To(BeEmpty())
		g.Expect(b.Status.Jobs).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
	Eventually(func(g Gomega) []string { return eventMessages(g, key, echov1alpha1.EventReasonJobNotOwned) }, timeout, interval).
		Should(ContainElement(ContainSubstring("kubectl delete job -n " + ns + " b1-backup")))
	Consistently(func(g Gomega) {
		got := &batchv1.Job{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(planted), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(planted.UID))
		g.Expect(got.DeletionTimestamp).To(BeNil(), "the tenant's Job is not deleted")
		g.Expect(got.OwnerReferences).To(BeEmpty(), "the tenant's Job is not adopted")
	}, "2s", interval).Should(Succeed())

	// As the message says: delete the Job, then back up again.
	d := &docsKubectl{ns: ns, values: map[string]string{"JOB": planted.Name}}
	Expect(d.run(Default, documented("delete", "job", "JOB"))).To(ContainSubstring(`job.batch "b1-backup" deleted`))
	again := types.NamespacedName{Namespace: ns, Name: "b2"}
	Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: again.Name},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: h.key.Name, Storage: h.storage}})).To(Succeed())
	job := waitJobNamed(t, ns, "b2-backup")
	endMoverPod(t, job, h.mover.run)
	b := waitBackupComplete(t, again)
	Expect(b.Status.Jobs).To(ConsistOf(echov1alpha1.JobReference{Name: job.Name, UID: job.UID}))
	Expect(b.Status.Location).NotTo(ContainSubstring("tenant"))
}
