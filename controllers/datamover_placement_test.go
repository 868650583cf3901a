package controllers

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// Mover settings used below: sizes, a node selector, a toleration, an
// affinity and a priority class.
var (
	bigMover = &echov1alpha1.MoverResources{
		Requests: map[corev1.ResourceName]echov1alpha1.BoundedQuantity{corev1.ResourceCPU: echov1alpha1.MustBoundedQuantity("500m")},
		Limits:   map[corev1.ResourceName]echov1alpha1.BoundedQuantity{corev1.ResourceMemory: echov1alpha1.MustBoundedQuantity("1Gi")},
	}
	smallMover = &echov1alpha1.MoverResources{
		Limits: map[corev1.ResourceName]echov1alpha1.BoundedQuantity{corev1.ResourceCPU: echov1alpha1.MustBoundedQuantity("1")},
	}
	storageNodes   = map[string]echov1alpha1.LabelValue{"node-role.example.com/storage": ""}
	zoneA          = map[string]echov1alpha1.LabelValue{"topology.kubernetes.io/zone": "a"}
	storageTaint   = []echov1alpha1.Toleration{{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule}}
	anyTaint       = []echov1alpha1.Toleration{{Operator: corev1.TolerationOpExists}}
	nearCacheNodes = &echov1alpha1.Affinity{NodeAffinity: &echov1alpha1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []echov1alpha1.PreferredSchedulingTerm{{Weight: 10,
			Preference: echov1alpha1.NodeSelectorTerm{MatchExpressions: []echov1alpha1.NodeSelectorRequirement{
				{Key: "cache", Operator: corev1.NodeSelectorOpExists}}}}}}}
	awayFromDB = &echov1alpha1.Affinity{PodAntiAffinity: &echov1alpha1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []echov1alpha1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
			LabelSelector: &echov1alpha1.LabelSelector{MatchLabels: map[string]echov1alpha1.LabelValue{"app": "db"}}}}}}
)

// TestEffectiveMover: each field is the object's, else the location's,
// else unset (the Job's default); an empty field sets nothing.
func TestEffectiveMover(t *testing.T) {
	full := &echov1alpha1.MoverSettings{Resources: bigMover, NodeSelector: storageNodes, Tolerations: storageTaint,
		Affinity: nearCacheNodes, PriorityClassName: "backup-low"}
	cases := []struct {
		name      string
		own, loc  *echov1alpha1.MoverSettings
		want      echov1alpha1.MoverSettings
		wantEmpty bool
	}{
		{name: "none", wantEmpty: true},
		{name: "empty settings", own: &echov1alpha1.MoverSettings{}, loc: &echov1alpha1.MoverSettings{}, wantEmpty: true},
		{name: "the object's alone", own: full, want: *full},
		{name: "the location's alone", loc: full, want: *full},
		{name: "the object's win, field by field",
			own: &echov1alpha1.MoverSettings{Resources: smallMover, Tolerations: anyTaint},
			loc: full,
			want: echov1alpha1.MoverSettings{Resources: smallMover, NodeSelector: storageNodes, Tolerations: anyTaint,
				Affinity: nearCacheNodes, PriorityClassName: "backup-low"}},
		{name: "every field of the object wins",
			own:  &echov1alpha1.MoverSettings{Resources: smallMover, NodeSelector: zoneA, Tolerations: anyTaint, Affinity: awayFromDB, PriorityClassName: "batch"},
			loc:  full,
			want: echov1alpha1.MoverSettings{Resources: smallMover, NodeSelector: zoneA, Tolerations: anyTaint, Affinity: awayFromDB, PriorityClassName: "batch"}},
		{name: "empty fields of the object leave the location's",
			own: &echov1alpha1.MoverSettings{Resources: &echov1alpha1.MoverResources{Requests: map[corev1.ResourceName]echov1alpha1.BoundedQuantity{}},
				NodeSelector: map[string]echov1alpha1.LabelValue{}, Tolerations: []echov1alpha1.Toleration{}, Affinity: &echov1alpha1.Affinity{}},
			loc:  full,
			want: *full},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := effectiveMover(tc.own, tc.loc)
			if tc.wantEmpty {
				tc.want = echov1alpha1.MoverSettings{}
			}
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("effectiveMover = %+v, want %+v", got, tc.want)
			}
		})
	}
	loc := &echov1alpha1.EchoBackupLocation{Spec: echov1alpha1.EchoBackupLocationSpec{Mover: full}}
	if m := moverFor("img", nil, nil, loc); m.image != "img" || !equality.Semantic.DeepEqual(m.placement, *full) {
		t.Errorf("moverFor with the location's settings alone = %+v", m)
	}
	if m := moverFor("img", nil, nil, nil); !equality.Semantic.DeepEqual(m.placement, echov1alpha1.MoverSettings{}) {
		t.Errorf("moverFor without settings nor location = %+v, want no placement", m)
	}
}

// placedJobs builds every kind of data mover Job with the placement p, for
// a ready Echo on a ReadWriteOnce claim with a node selector and a
// toleration of its own.
func placedJobs(p echov1alpha1.MoverSettings) map[string]*batchv1.Job {
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: echov1alpha1.EchoSpec{
			Persistence:  &echov1alpha1.PersistenceSpec{Enabled: true, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
			NodeSelector: map[string]echov1alpha1.LabelValue{"disk": "ssd"},
			Tolerations:  []echov1alpha1.Toleration{{Key: "echo", Operator: corev1.TolerationOpExists}},
		},
		Status: echov1alpha1.EchoStatus{ReadyReplicas: 1}}
	b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: "web", Storage: testStorage}}
	rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1"}}
	src := restoreSource{storage: testStorage, key: "ns/web/b1", echoName: "web"}
	m := moverSettings{image: "img", placement: p}
	return map[string]*batchv1.Job{
		"backup":  backupJob(b, echo, b.Spec.Storage, m),
		"delete":  deleteJob(b, b.Spec.Storage, m),
		"inspect": inspectJob(rs, src, m),
		"restore": restoreJob(rs, src, echo, m),
	}
}

// TestMoverJobsDefaults: without settings, every Job keeps the resources
// and scheduling it always had.
func TestMoverJobsDefaults(t *testing.T) {
	echoSelector := map[string]string{"disk": "ssd"}
	echoTolerations := []corev1.Toleration{{Key: "echo", Operator: corev1.TolerationOpExists}}
	want := map[string]struct {
		resources    corev1.ResourceRequirements
		nodeSelector map[string]string
		tolerations  []corev1.Toleration
		dataAffinity bool
	}{
		"backup":  {dataMoverResources, echoSelector, echoTolerations, true},
		"restore": {dataMoverResources, echoSelector, echoTolerations, false},
		"delete":  {resources: storeClientResources},
		"inspect": {resources: storeClientResources},
	}
	for kind, job := range placedJobs(echov1alpha1.MoverSettings{}) {
		pod := job.Spec.Template.Spec
		w := want[kind]
		if !equality.Semantic.DeepEqual(pod.Containers[0].Resources, w.resources) {
			t.Errorf("%s: resources = %v, want %v", kind, pod.Containers[0].Resources, w.resources)
		}
		if !equality.Semantic.DeepEqual(pod.NodeSelector, w.nodeSelector) || !equality.Semantic.DeepEqual(pod.Tolerations, w.tolerations) {
			t.Errorf("%s: nodeSelector %v and tolerations %v, want %v and %v", kind, pod.NodeSelector, pod.Tolerations, w.nodeSelector, w.tolerations)
		}
		if got := pod.Affinity != nil; got != w.dataAffinity {
			t.Errorf("%s: affinity %v, want one: %v", kind, pod.Affinity, w.dataAffinity)
		}
		if pod.PriorityClassName != "" {
			t.Errorf("%s: priority class %q, want none", kind, pod.PriorityClassName)
		}
	}
}

// TestMoverJobsPlaced: each setting reaches the pod of every Job; the
// affinity keeps a backup beside the Echo's pods on its ReadWriteOnce
// claim.
func TestMoverJobsPlaced(t *testing.T) {
	p := echov1alpha1.MoverSettings{Resources: bigMover, NodeSelector: storageNodes, Tolerations: storageTaint,
		Affinity: awayFromDB, PriorityClassName: "backup-low"}
	wantResources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: echov1alpha1.MustBoundedQuantity("500m").Quantity},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: echov1alpha1.MustBoundedQuantity("1Gi").Quantity},
	}
	for kind, job := range placedJobs(p) {
		pod := job.Spec.Template.Spec
		if !equality.Semantic.DeepEqual(pod.Containers[0].Resources, wantResources) {
			t.Errorf("%s: resources = %v, want %v", kind, pod.Containers[0].Resources, wantResources)
		}
		if !equality.Semantic.DeepEqual(pod.NodeSelector, map[string]string{"node-role.example.com/storage": ""}) {
			t.Errorf("%s: nodeSelector = %v, want the settings' alone", kind, pod.NodeSelector)
		}
		wantTolerations := []corev1.Toleration{{Key: "dedicated", Value: "storage", Effect: corev1.TaintEffectNoSchedule}}
		if !equality.Semantic.DeepEqual(pod.Tolerations, wantTolerations) {
			t.Errorf("%s: tolerations = %v, want the settings' alone", kind, pod.Tolerations)
		}
		if pod.PriorityClassName != "backup-low" {
			t.Errorf("%s: priority class %q, want backup-low", kind, pod.PriorityClassName)
		}
		a := pod.Affinity
		if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 1 ||
			a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchLabels["app"] != "db" {
			t.Fatalf("%s: affinity %+v lacks the settings' anti-affinity", kind, a)
		}
		var joined []corev1.PodAffinityTerm
		if a.PodAffinity != nil {
			joined = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		wantJoined := 0
		if kind == "backup" {
			wantJoined = 1
		}
		if len(joined) != wantJoined {
			t.Fatalf("%s: required pod affinity %v, want %d terms (the data's)", kind, joined, wantJoined)
		}
		if wantJoined == 1 && !equality.Semantic.DeepEqual(joined[0].LabelSelector.MatchLabels, chart.SelectorLabels("web")) {
			t.Errorf("backup: the pod affinity %v does not join the Echo's pods", joined[0])
		}
	}
}

// TestMoverSettingsTouchNothingElse: whatever a tenant sets, the pod keeps
// its restricted security, its identity, volumes and command: only its
// resources and scheduling differ from the default pod.
func TestMoverSettingsTouchNothingElse(t *testing.T) {
	p := echov1alpha1.MoverSettings{Resources: bigMover, NodeSelector: storageNodes, Tolerations: anyTaint,
		Affinity: awayFromDB, PriorityClassName: "backup-low"}
	defaults := placedJobs(echov1alpha1.MoverSettings{})
	for kind, job := range placedJobs(p) {
		got, want := job.DeepCopy(), defaults[kind].DeepCopy()
		for _, j := range []*batchv1.Job{got, want} {
			pod := &j.Spec.Template.Spec
			pod.NodeSelector, pod.Tolerations, pod.Affinity, pod.PriorityClassName = nil, nil, nil, ""
			pod.Containers[0].Resources = corev1.ResourceRequirements{}
		}
		if !equality.Semantic.DeepEqual(got, want) {
			t.Errorf("%s: the settings changed more than resources and scheduling:\n got %+v\nwant %+v", kind, got.Spec.Template.Spec, want.Spec.Template.Spec)
		}
		pod := job.Spec.Template.Spec
		if pod.HostNetwork || pod.HostPID || pod.HostIPC || !*pod.SecurityContext.RunAsNonRoot ||
			!equality.Semantic.DeepEqual(pod.Containers[0].SecurityContext, restrictedContainerSecurity()) ||
			pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || !ptr.Equal(pod.EnableServiceLinks, ptr.To(false)) {
			t.Errorf("%s: the placed pod is not restricted: %+v", kind, pod)
		}
	}
}
