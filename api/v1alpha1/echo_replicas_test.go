package v1alpha1_test

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestDesiredReplicas(t *testing.T) {
	ha := &echov1alpha1.HighAvailabilitySpec{Enabled: true}
	tests := []struct {
		name string
		spec echov1alpha1.EchoSpec
		want echov1alpha1.ReplicaCounts
	}{
		{"defaults", echov1alpha1.EchoSpec{}, echov1alpha1.ReplicaCounts{Replicas: 1, MinReplicas: 1, MaxReplicas: 5}},
		{"replicas", echov1alpha1.EchoSpec{Replicas: ptr.To[int32](4)}, echov1alpha1.ReplicaCounts{Replicas: 4, MinReplicas: 1, MaxReplicas: 5}},
		{"zero replicas", echov1alpha1.EchoSpec{Replicas: ptr.To[int32](0)}, echov1alpha1.ReplicaCounts{Replicas: 0, MinReplicas: 1, MaxReplicas: 5}},
		{"high availability raises replicas to 3", echov1alpha1.EchoSpec{HighAvailability: ha},
			echov1alpha1.ReplicaCounts{Replicas: 3, MinReplicas: 1, MaxReplicas: 5}},
		{"high availability keeps more", echov1alpha1.EchoSpec{Replicas: ptr.To[int32](5), HighAvailability: ha},
			echov1alpha1.ReplicaCounts{Replicas: 5, MinReplicas: 1, MaxReplicas: 5}},
		{"autoscaling bounds", echov1alpha1.EchoSpec{Autoscaling: &echov1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: 2, MaxReplicas: 7}},
			echov1alpha1.ReplicaCounts{Autoscaled: true, Replicas: 1, MinReplicas: 2, MaxReplicas: 7}},
		{"autoscaling defaults", echov1alpha1.EchoSpec{Autoscaling: &echov1alpha1.AutoscalingSpec{Enabled: true}},
			echov1alpha1.ReplicaCounts{Autoscaled: true, Replicas: 1, MinReplicas: 1, MaxReplicas: 5}},
		{"high availability raises the autoscaler's minimum, and its maximum with it", echov1alpha1.EchoSpec{HighAvailability: ha,
			Autoscaling: &echov1alpha1.AutoscalingSpec{Enabled: true, MinReplicas: 1, MaxReplicas: 2}},
			echov1alpha1.ReplicaCounts{Autoscaled: true, Replicas: 1, MinReplicas: 3, MaxReplicas: 3}},
		{"a disabled autoscaler's bounds are kept", echov1alpha1.EchoSpec{Replicas: ptr.To[int32](3), HighAvailability: ha,
			Autoscaling: &echov1alpha1.AutoscalingSpec{MinReplicas: 1, MaxReplicas: 2}},
			echov1alpha1.ReplicaCounts{Replicas: 3, MinReplicas: 1, MaxReplicas: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.spec.DesiredReplicas(); got != tt.want {
				t.Errorf("DesiredReplicas() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The CRD's CEL rule on high availability refuses exactly the specs whose
// replicas DesiredReplicas would have to raise, and the CRD's defaults are
// DesiredReplicas's.
func TestReplicaRulesAgreeWithAdmission(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	for _, replicas := range []any{nil, 0, 1, 2, 3, 4} {
		for _, autoscaling := range []any{nil, false, true} {
			for _, minReplicas := range []any{nil, 1, 2, 3, 4} {
				for _, enabled := range []bool{false, true} {
					spec := replicaSpec(replicas, autoscaling, minReplicas, enabled)
					expectAdmissionAgrees(ns, spec)
				}
			}
		}
	}
}

// replicaSpec is an Echo spec with these settings, nil ones unset.
func replicaSpec(replicas, autoscaling, minReplicas any, highAvailability bool) map[string]any {
	spec := map[string]any{"highAvailability": map[string]any{"enabled": highAvailability}}
	if replicas != nil {
		spec["replicas"] = replicas
	}
	if autoscaling != nil || minReplicas != nil {
		as := map[string]any{"maxReplicas": 10}
		if autoscaling != nil {
			as["enabled"] = autoscaling
		}
		if minReplicas != nil {
			as["minReplicas"] = minReplicas
		}
		spec["autoscaling"] = as
	}
	return spec
}

// expectAdmissionAgrees creates an Echo of spec in a dry run: it must be
// refused if and only if high availability raises its replicas, and
// admitted with the defaults DesiredReplicas assumes.
func expectAdmissionAgrees(ns string, spec map[string]any) {
	typed := decodeSpec(spec)
	without := typed
	without.HighAvailability = nil
	raised := typed.DesiredReplicas() != without.DesiredReplicas()

	obj := echoObject(ns, "replicas", spec)
	err := k8sClient.Create(context.Background(), obj, client.DryRunAll)
	if raised {
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "spec %v: raised by DesiredReplicas, want refused; got %v", spec, err)
		Expect(err.Error()).To(ContainSubstring("highAvailability needs at least 3 replicas"))
		return
	}
	Expect(err).NotTo(HaveOccurred(), "spec %v: not raised by DesiredReplicas, want admitted", spec)
	admitted := decodeSpec(obj.Object["spec"].(map[string]any))
	Expect(admitted.DesiredReplicas()).To(Equal(typed.DesiredReplicas()), "spec %v: the CRD's defaults differ from DesiredReplicas's", spec)
}

func decodeSpec(spec map[string]any) echov1alpha1.EchoSpec {
	var s echov1alpha1.EchoSpec
	b, err := json.Marshal(spec)
	Expect(err).NotTo(HaveOccurred())
	Expect(json.Unmarshal(b, &s)).To(Succeed())
	return s
}
