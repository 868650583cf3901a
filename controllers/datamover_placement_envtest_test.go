package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// quantities is a resource list of the bounded quantities given.
func quantities(kv ...string) map[corev1.ResourceName]echov1alpha1.BoundedQuantity {
	out := map[corev1.ResourceName]echov1alpha1.BoundedQuantity{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = echov1alpha1.MustBoundedQuantity(kv[i+1])
	}
	return out
}

// expectPlaced checks a mover pod's resources, node selector, tolerations
// and priority class.
func expectPlaced(t *testing.T, pod corev1.PodSpec, requests, limits corev1.ResourceList, nodeSelector map[string]string,
	tolerations []corev1.Toleration, priorityClass string) {
	t.Helper()
	res := pod.Containers[0].Resources
	Expect(res.Requests).To(HaveLen(len(requests)))
	for name, q := range requests {
		got := res.Requests[name]
		Expect(got.Cmp(q)).To(BeZero(), "requests.%s = %v, want %v", name, got.String(), q.String())
	}
	Expect(res.Limits).To(HaveLen(len(limits)))
	for name, q := range limits {
		got := res.Limits[name]
		Expect(got.Cmp(q)).To(BeZero(), "limits.%s = %v, want %v", name, got.String(), q.String())
	}
	Expect(pod.NodeSelector).To(Equal(nodeSelector))
	Expect(pod.Tolerations).To(Equal(tolerations))
	Expect(pod.PriorityClassName).To(Equal(priorityClass))
}

// ensurePriorityClass creates a PriorityClass of that name, once for
// every test that needs it, and deletes it after the test.
func ensurePriorityClass(t *testing.T, name string) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 100}
	Expect(client.IgnoreAlreadyExists(k8sClient.Create(context.Background(), pc))).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), pc) })
}

// TestMoverJobsTakeTheSettings: a backup's Job runs with the backup's own
// mover settings; a backup, the deletion of its artifact, a restore and an
// Echo's final backup that use a location take the location's for each
// field they do not set; so does a restore of a stored backup the location
// lists.
func TestMoverJobsTakeTheSettings(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createEcho(t, newEcho(ns, "web"))
	createSecret(t, ns, "offsite-credentials", storageSecretOptedIn, "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
	loc := newLocation(ns, "offsite")
	loc.Spec.Mover = &echov1alpha1.MoverSettings{
		Resources:         &echov1alpha1.MoverResources{Requests: quantities("memory", "512Mi"), Limits: quantities("memory", "1Gi")},
		NodeSelector:      map[string]echov1alpha1.LabelValue{"node-role.example.com/storage": ""},
		Tolerations:       []echov1alpha1.Toleration{{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: "backup-location",
	}
	Expect(k8sClient.Create(ctx, loc)).To(Succeed())
	locRequests := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	locLimits := corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	locNodes := map[string]string{"node-role.example.com/storage": ""}
	locTolerations := []corev1.Toleration{{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule}}

	t.Run("a backup's own settings", func(t *testing.T) {
		RegisterTestingT(t)
		b := newBackup(ns, "own", "web")
		b.Spec.Mover = &echov1alpha1.MoverSettings{
			Resources:    &echov1alpha1.MoverResources{Requests: quantities("cpu", "250m", "memory", "128Mi"), Limits: quantities("cpu", "1", "memory", "512Mi")},
			NodeSelector: map[string]echov1alpha1.LabelValue{"topology.kubernetes.io/zone": "a"},
			Tolerations:  []echov1alpha1.Toleration{{Key: "batch", Operator: corev1.TolerationOpExists}},
			Affinity: &echov1alpha1.Affinity{PodAntiAffinity: &echov1alpha1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []echov1alpha1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &echov1alpha1.LabelSelector{MatchLabels: map[string]echov1alpha1.LabelValue{"app": "db"}}}}}},
			PriorityClassName: "backup-low",
		}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		pod := waitJob(t, ns, "own-backup").Spec.Template.Spec
		expectPlaced(t, pod,
			corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			map[string]string{"topology.kubernetes.io/zone": "a"},
			[]corev1.Toleration{{Key: "batch", Operator: corev1.TolerationOpExists}}, "backup-low")
		Expect(pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(ConsistOf(
			HaveField("LabelSelector.MatchLabels", map[string]string{"app": "db"})))
	})

	t.Run("a backup at the location takes the location's, field by field", func(t *testing.T) {
		RegisterTestingT(t)
		b := backupAt(ns, "inherits", "offsite")
		b.Spec.Mover = &echov1alpha1.MoverSettings{PriorityClassName: "backup-own"}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		expectPlaced(t, waitJob(t, ns, "inherits-backup").Spec.Template.Spec, locRequests, locLimits, locNodes, locTolerations, "backup-own")
	})

	t.Run("the deletion of a backup at the location takes the location's, field by field", func(t *testing.T) {
		RegisterTestingT(t)
		b := backupAt(ns, "goes", "offsite")
		b.Spec.DeletionPolicy = echov1alpha1.DeletionPolicyDelete
		b.Spec.Mover = &echov1alpha1.MoverSettings{PriorityClassName: "backup-own"}
		// The pod that plays the backup's must be admitted: its class exists.
		ensurePriorityClass(t, "backup-own")
		completeBackup(t, b)
		deleteBackup(t, b)
		expectPlaced(t, waitJob(t, ns, "goes-delete").Spec.Template.Spec, locRequests, locLimits, locNodes, locTolerations, "backup-own")
	})

	t.Run("a restore from the location takes the location's", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dr"},
			Spec: echov1alpha1.EchoRestoreSpec{EchoName: "copy", Source: echov1alpha1.RestoreSource{
				Storage: &echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "offsite"}}, Key: "src/web/web-1"}}})).To(Succeed())
		expectPlaced(t, waitJob(t, ns, "dr-inspect").Spec.Template.Spec, locRequests, locLimits, locNodes, locTolerations, "backup-location")
	})

	t.Run("a restore of a stored backup of the location takes the location's, field by field", func(t *testing.T) {
		RegisterTestingT(t)
		Expect(k8sClient.Create(ctx, &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "listed"},
			Spec: echov1alpha1.EchoRestoreSpec{Source: echov1alpha1.RestoreSource{StoredBackup: "offsite.src.web.web-1"},
				Mover: &echov1alpha1.MoverSettings{Resources: &echov1alpha1.MoverResources{Limits: quantities("memory", "2Gi")}}}})).To(Succeed())
		expectPlaced(t, waitJob(t, ns, "listed-inspect").Spec.Template.Spec, nil,
			corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}, locNodes, locTolerations, "backup-location")
	})

	t.Run("an Echo's final backup to the location takes the location's", func(t *testing.T) {
		RegisterTestingT(t)
		key := types.NamespacedName{Namespace: ns, Name: "precious"}
		createEcho(t, newEcho(ns, key.Name, func(e *echov1alpha1.Echo) {
			e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true}
			e.Spec.Backup = &echov1alpha1.EchoBackupPolicy{BeforeDelete: &echov1alpha1.FinalBackupSpec{Enabled: true,
				Storage: &echov1alpha1.BackupStorage{LocationRef: &echov1alpha1.LocationReference{Name: "offsite"}}}}
		}))
		rollOut(t, key)
		Expect(k8sClient.Delete(ctx, getEcho(Default, key))).To(Succeed())
		job := waitJob(t, ns, finalBackupOf(t, key).Name+"-backup")
		expectPlaced(t, job.Spec.Template.Spec, locRequests, locLimits, locNodes, locTolerations, "backup-location")
	})
}
