package controllers

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestScratchEchoName(t *testing.T) {
	long := strings.Repeat("a", 53)
	cases := []struct{ echo, want string }{
		{"web", "web-restoretest"},
		{strings.Repeat("b", 41), strings.Repeat("b", 41) + "-restoretest"},
	}
	for _, tc := range cases {
		if got := scratchEchoName(tc.echo); got != tc.want {
			t.Errorf("scratchEchoName(%q) = %q, want %q", tc.echo, got, tc.want)
		}
	}
	for _, echo := range []string{strings.Repeat("c", 42), long, strings.Repeat("d", 31) + "-" + strings.Repeat("e", 21)} {
		got := scratchEchoName(echo)
		if len(got) > maxEchoNameLen || !strings.HasSuffix(got, "-restoretest") || len(validation.IsDNS1035Label(got)) > 0 {
			t.Errorf("scratchEchoName(%q) = %q: not an Echo name ending in -restoretest", echo, got)
		}
		if got == scratchEchoName(echo+"x") || got != scratchEchoName(echo) {
			t.Errorf("scratchEchoName(%q) = %q is not deterministic and distinct", echo, got)
		}
	}
}

func TestMakeScratch(t *testing.T) {
	schedule := &echov1alpha1.EchoBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", UID: "s-uid"}}
	rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{
		Name: "nightly-restoretest-1", Labels: map[string]string{echov1alpha1.RestoreTestOfLabel: "nightly"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(schedule, echov1alpha1.GroupVersion.WithKind("EchoBackupSchedule"))},
	}}
	echo := &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Name: "web-restoretest", Labels: map[string]string{"team": "blue"}},
		Spec: echov1alpha1.EchoSpec{
			Replicas:         ptr.To[int32](5),
			Message:          "kept",
			Service:          echov1alpha1.ServiceSpec{Type: "LoadBalancer", Port: 8080, Annotations: map[string]string{"lb": "public"}},
			Ingress:          &echov1alpha1.IngressSpec{Enabled: true, Host: "web.example.test"},
			HighAvailability: &echov1alpha1.HighAvailabilitySpec{Enabled: true},
			Autoscaling:      &echov1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: 3, MaxReplicas: 9},
			Persistence:      &echov1alpha1.PersistenceSpec{Enabled: true},
			Backup:           &echov1alpha1.EchoBackupPolicy{BeforeDelete: &echov1alpha1.FinalBackupSpec{Enabled: true}},
		},
	}
	makeScratch(rs, echo)
	s := echo.Spec
	switch {
	case echo.Labels[echov1alpha1.RestoreTestOfLabel] != "nightly" || echo.Labels["team"] != "blue":
		t.Errorf("labels %v: want the restore test's label besides the backed-up ones", echo.Labels)
	case len(echo.OwnerReferences) != 1 || echo.OwnerReferences[0].UID != "s-uid" || ptr.Deref(echo.OwnerReferences[0].Controller, false):
		t.Errorf("owner references %v: want the schedule, not as controller", echo.OwnerReferences)
	case ptr.Deref(s.Replicas, 0) != 1:
		t.Errorf("replicas %v, want 1", s.Replicas)
	case s.Ingress != nil || s.Autoscaling != nil || s.HighAvailability != nil:
		t.Errorf("ingress %v, autoscaling %v, high availability %v: want none", s.Ingress, s.Autoscaling, s.HighAvailability)
	case s.Service.Type != "ClusterIP" || s.Service.Port != 8080 || s.Service.Annotations != nil:
		t.Errorf("service %+v: want ClusterIP on the same port without annotations", s.Service)
	case s.Backup != nil:
		t.Errorf("backup %+v: want no final backup", s.Backup)
	case s.Persistence == nil || !s.Persistence.Enabled || s.Message != "kept":
		t.Errorf("spec %+v: want the backed-up persistence and message", s)
	}

	t.Run("an EchoRestore no schedule controls gives the Echo no owner", func(t *testing.T) {
		bare := rs.DeepCopy()
		bare.OwnerReferences = nil
		e := &echov1alpha1.Echo{}
		makeScratch(bare, e)
		if len(e.OwnerReferences) != 0 {
			t.Errorf("owner references %v, want none", e.OwnerReferences)
		}
	})
}
