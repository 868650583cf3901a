//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	echochart "github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// bulkObjectBytes is the size of each labelled object the tenant makes:
// near the API server's limit for one object.
const bulkObjectBytes = 900 << 10

// restrictedContainer runs under the restricted Pod Security Standard.
func restrictedContainer(name string) corev1.Container {
	return corev1.Container{
		Name: name, Image: "registry.example.test/tenant:1", Command: []string{"/bin/true"},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// bulkLabelledObjects are n objects of each kind the operator watches by
// labels anyone who may write in ns can set, each about bulkObjectBytes:
// ConfigMaps and pods labelled as the operator's, Deployments labelled as
// the chart's, and Secrets labelled as the records of echo's release.
func bulkLabelledObjects(ns, echo string, n int) []client.Object {
	pad := strings.Repeat("x", bulkObjectBytes)
	managed := map[string]string{echochart.ManagedByLabel: echov1alpha1.ManagedBy}
	var objs []client.Object
	for i := range n {
		meta := func(labels map[string]string) metav1.ObjectMeta {
			return metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bulk-%d", i), Labels: labels}
		}
		pod := restrictedContainer("c")
		pod.Env = []corev1.EnvVar{{Name: "PAD", Value: pad}}
		objs = append(objs,
			&corev1.ConfigMap{ObjectMeta: meta(managed), Data: map[string]string{"pad": pad}},
			&corev1.Pod{ObjectMeta: meta(managed), Spec: corev1.PodSpec{Containers: []corev1.Container{pod}}},
			&appsv1.Deployment{ObjectMeta: meta(map[string]string{echochart.NameLabel: echochart.Name}), Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"bulk": "x"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"bulk": "x"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{pod}}},
			}},
			&corev1.Secret{ObjectMeta: meta(map[string]string{
				echochart.ReleaseOwnerLabel: echochart.ReleaseOwner, echochart.ReleaseNameLabel: echochart.ReleaseName(echo),
				echochart.ReleaseStatusLabel: "deployed", echochart.ReleaseVersionLabel: fmt.Sprint(100 + i),
			}), Type: "helm.sh/release.v1", Data: map[string][]byte{"release": []byte(pad)}},
		)
	}
	return objs
}

// createBulk creates the objects as the tenant, and deletes them when the
// test ends: they weigh on the API server, not only on the operator.
func createBulk(t *testing.T, tn tenant, objs []client.Object) {
	t.Helper()
	ctx := context.Background()
	for _, obj := range objs {
		Expect(tn.c.Create(ctx, obj)).To(Succeed(), "the edit role creates %T %s", obj, obj.GetName())
		t.Cleanup(func() {
			_ = k8sClient.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		})
	}
}

// TestHostileTenantLabelledObjects: a tenant labels large objects of every
// kind the operator watches as the operator's, the chart's or its
// release's, and backs up its Echo (which reads release records). The
// operator's memory grows by far less than what was labelled, and another
// namespace's new Echo becomes Ready.
func TestHostileTenantLabelledObjects(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)
	tn := newTenant(t)
	webKey := types.NamespacedName{Namespace: tn.ns, Name: "web"}
	Expect(tn.c.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "web"}})).To(Succeed())
	waitReady(t, webKey, 1)

	before := peakRSS(Default)
	const perKind = 24
	createBulk(t, tn, bulkLabelledObjects(tn.ns, webKey.Name, perKind))
	// The claim the backups go to, opted in as backup storage as
	// backup-restore.md tells.
	Expect(tn.c.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: "backups"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	})).To(Succeed())
	d := &docsKubectl{ns: tn.ns, values: map[string]string{"CLAIM": "backups"}}
	Expect(d.run(Default, documented("label", "pvc", "CLAIM", "echo.dev/backup-storage=true"))).To(ContainSubstring("labeled"))
	for i := range 3 {
		b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: fmt.Sprintf("b%d", i)},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: webKey.Name, Storage: echov1alpha1.BackupStorage{
				PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "backups"}}}}
		Expect(tn.c.Create(ctx, b)).To(Succeed())
		waitJobNamed(t, tn.ns, b.Name+"-backup")
	}

	otherKey := types.NamespacedName{Namespace: newRestrictedNamespace(t), Name: "neighbour"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: otherKey.Namespace, Name: otherKey.Name}})).To(Succeed())
	waitReady(t, otherKey, 1)
	waitReady(t, webKey, 1)

	labelled := 4 * perKind * bulkObjectBytes >> 10
	grew := peakRSS(Default) - before
	t.Logf("the tenant labelled %d MiB; the operator's peak RSS grew by %d MiB", labelled>>10, grew>>10)
	Expect(grew).To(BeNumerically("<", labelledObjectsBound>>10),
		"the operator's peak RSS grew by %d KiB for %d KiB of labelled objects", grew, labelled)
}

// labelledObjectsBound is what TestHostileTenantLabelledObjects allows the
// manager's peak RSS to grow by: the bound docs/architecture.md states for
// a hundred labelled objects of about 1 MiB (a few KiB each past the
// cache's bound, and a page of 16 release records at a time).
const labelledObjectsBound = 48 << 20

// forgedReportNamespace is the namespace of TestHostileTenantForgedMoverPod,
// whose Job pods are held (see heldJobPodNamespace).
const forgedReportNamespace = "e2e-forged-report"

// TestHostileTenantForgedMoverPod: a tenant's pod that carries a backup
// Job's controller-uid label, and that the Job controller adopts, reports
// the backup complete; the operator does not read it, and the backup does
// not complete.
func TestHostileTenantForgedMoverPod(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)
	h := newHeldEcho(t, forgedReportNamespace, "forged-report", "forged")
	tn := tenantOf(t, forgedReportNamespace)

	key := types.NamespacedName{Namespace: h.key.Namespace, Name: "forged-report"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: h.key.Name, Storage: h.storage}})).To(Succeed())
	job := waitJobNamed(t, key.Namespace, key.Name+"-backup")
	// The Job's own pod stops, as an evicted pod does: the Job waits out
	// its backoff before the next, and adopts the tenant's pod meanwhile.
	endMoverPod(t, job, func(*corev1.Pod) podEnd { return stoppedBySignal() })

	report, err := moverprotocol.Encode(moverprotocol.Archive{Size: 1, Checksum: "sha256:" + strings.Repeat("0", 64),
		Location: "s3://tenant/fake", Files: 1})
	Expect(err).NotTo(HaveOccurred())
	forged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "forged-mover", Labels: job.Spec.Template.Labels,
			// As the kubelet would report the tenant's container, which
			// writes a success to its termination log.
			Annotations: map[string]string{simcluster.JobPodExitCodeAnnotation: "0", simcluster.JobPodMessageAnnotation: string(report)}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{restrictedContainer(moverprotocol.ContainerName)}},
	}
	Expect(tn.c.Create(ctx, forged)).To(Succeed())

	// The Job controller adopts the tenant's pod and the Job completes
	// with it; the operator, which removes a finished backup's Job at
	// once, finds no report of a pod that ran the Job's own mover.
	Eventually(func(g Gomega) {
		b := &echov1alpha1.EchoBackup{}
		g.Expect(k8sClient.Get(ctx, key, b)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeFalse(),
			"the tenant's report completed the backup: %s", b.Status.Location)
		failed := meta.FindStatusCondition(b.Status.Conditions, echov1alpha1.BackupConditionFailed)
		g.Expect(failed).NotTo(BeNil())
		g.Expect(failed.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(failed.Reason).To(Equal(echov1alpha1.BackupReasonArtifactMissing), "the Job completed without a report the operator reads: %s", failed.Message)
		g.Expect(b.Status.Location).NotTo(ContainSubstring("tenant"))
	}, timeout, interval).Should(Succeed())
}
