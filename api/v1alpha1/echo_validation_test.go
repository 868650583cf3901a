package v1alpha1_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Bad input is rejected by the API server at admission, with a message that
// says what to fix, before the operator ever sees it.
func TestEchoInvalidSpecsAreRejected(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)

	cases := []struct {
		name string
		spec map[string]any
		want string
	}{
		{"negative replicas", map[string]any{"replicas": -1}, "spec.replicas"},
		{"too many replicas", map[string]any{"replicas": 5000}, "spec.replicas"},
		{"privileged port", map[string]any{"port": 80}, "spec.port"},
		{"unknown pull policy", map[string]any{"imagePullPolicy": "Sometimes"}, "spec.imagePullPolicy"},
		{"image with spaces", map[string]any{"image": "echo server"}, "spec.image"},
		{"image with upper-case path", map[string]any{"image": "example.test/Echo:1"}, "spec.image"},
		{"storage class that is no name", map[string]any{"persistence": map[string]any{"enabled": true, "storageClassName": "Fast Disks"}}, "spec.persistence.storageClassName"},
		{"autoscaling without a CPU request", map[string]any{"autoscaling": map[string]any{"enabled": true},
			"resources": map[string]any{"requests": map[string]any{"memory": "64Mi"}}}, "spec.resources.requests.cpu is required when autoscaling is enabled"},
		{"unknown service type", map[string]any{"service": map[string]any{"type": "External"}}, "spec.service.type"},
		{"service port out of range", map[string]any{"service": map[string]any{"port": 70000}}, "spec.service.port"},
		{"autoscaling max below min", map[string]any{"autoscaling": map[string]any{"enabled": true, "minReplicas": 4, "maxReplicas": 2}},
			"autoscaling.maxReplicas must be greater than or equal to autoscaling.minReplicas"},
		{"HA with two replicas", map[string]any{"replicas": 2, "highAvailability": map[string]any{"enabled": true}},
			"highAvailability needs at least 3 replicas"},
		{"HA with autoscaling from two", map[string]any{"replicas": 3, "highAvailability": map[string]any{"enabled": true},
			"autoscaling": map[string]any{"enabled": true, "minReplicas": 2, "maxReplicas": 5}}, "highAvailability needs at least 3 replicas"},
		{"ReadWriteOnce volume with two replicas", map[string]any{"replicas": 2, "persistence": map[string]any{"enabled": true}},
			"a ReadWriteOnce volume can serve a single replica"},
		{"zero volume size", map[string]any{"persistence": map[string]any{"enabled": true, "size": "0"}}, "persistence.size must be greater than zero"},
		{"invalid volume size", map[string]any{"persistence": map[string]any{"enabled": true, "size": "lots"}}, "spec.persistence.size"},
		{"unknown access mode", map[string]any{"persistence": map[string]any{"enabled": true, "accessModes": []any{"ReadManyTimes"}}}, "spec.persistence.accessModes"},
		{"invalid CPU quantity", map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "two"}}}, "spec.resources.limits"},
		{"ingress without host", map[string]any{"ingress": map[string]any{"enabled": true}}, "ingress.host is required"},
		{"bad ingress host", map[string]any{"ingress": map[string]any{"enabled": true, "host": "Echo_Host.example"}}, "spec.ingress.host"},
		{"bad TLS secret name", map[string]any{"ingress": map[string]any{"enabled": true, "host": "a.example.test", "tlsSecretName": "Not Valid"}}, "spec.ingress.tlsSecretName"},
		{"final backup without storage", map[string]any{"backup": map[string]any{"beforeDelete": map[string]any{"enabled": true}}},
			"backup.beforeDelete.storage is required when the final backup is enabled"},
		{"unknown field", map[string]any{"replica": 3}, `unknown field "spec.replica"`},
		{"volume size with a huge exponent", map[string]any{"persistence": map[string]any{"enabled": true, "size": "1E999999999999"}},
			"must be a quantity such as 250m, 128Mi, 1Gi or 1e9"},
		{"volume size with a fractional exponent", map[string]any{"persistence": map[string]any{"enabled": true, "size": "1e1.5"}},
			"must be a quantity such as 250m, 128Mi, 1Gi or 1e9"},
		{"node affinity weight above 100", map[string]any{"affinity": map[string]any{"nodeAffinity": preferredTerms("preference", 101)}},
			"affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"},
		{"pod affinity weight of zero", map[string]any{"affinity": map[string]any{"podAffinity": preferredTerms("podAffinityTerm", 0)}},
			"affinity.podAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"},
		{"pod anti-affinity weight beyond int32", map[string]any{"affinity": map[string]any{"podAntiAffinity": preferredTerms("podAffinityTerm", 2147483648)}},
			"affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[].weight must be between 1 and 100"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			RegisterTestingT(t)
			u := echoObject(ns, "invalid", tc.spec)
			err := k8sClient.Create(context.Background(), u, client.FieldValidation("Strict"))
			Expect(err).To(HaveOccurred(), "the API server accepted %v", tc.spec)
			Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "%v", err)
			Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}

	t.Run("values close to the refused ones", func(t *testing.T) {
		RegisterTestingT(t)
		for name, spec := range map[string]map[string]any{
			"volume size with an exponent": {"persistence": map[string]any{"enabled": true, "size": "1e10"}},
			"affinity weights of 1 and 100": {"affinity": map[string]any{
				"nodeAffinity": preferredTerms("preference", 1), "podAffinity": preferredTerms("podAffinityTerm", 100),
				"podAntiAffinity": preferredTerms("podAffinityTerm", 100)}},
		} {
			err := k8sClient.Create(context.Background(), echoObject(ns, "valid", spec), client.DryRunAll, client.FieldValidation("Strict"))
			Expect(err).NotTo(HaveOccurred(), name)
		}
	})

	t.Run("names that cannot name a release or a Service", func(t *testing.T) {
		RegisterTestingT(t)
		for name, want := range map[string]string{
			strings.Repeat("a", 54): "at most 53 characters",
			"1echo":                 "must be a DNS-1035 label",
			"echo.v1":               "must be a DNS-1035 label",
		} {
			err := k8sClient.Create(context.Background(), echoObject(ns, name, nil))
			Expect(err).To(HaveOccurred(), name)
			Expect(err.Error()).To(ContainSubstring(want), name)
		}
	})
}

func TestEchoDefaultsAndImmutableFields(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	key := types.NamespacedName{Namespace: ns, Name: "defaults"}
	e := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}}
	e.Spec.Persistence = &echov1alpha1.PersistenceSpec{Enabled: true, StorageClassName: ptr.To("fast")}
	Expect(k8sClient.Create(context.Background(), e)).To(Succeed(), "creating Echo %s", key)
	Expect(e.Spec.Replicas).To(Equal(ptr.To[int32](1)))
	Expect(e.Spec.Port).To(BeEquivalentTo(8080))
	Expect(e.Spec.Message).To(Equal("Hello from Echo"))
	Expect(e.Spec.ImagePullPolicy).To(Equal(corev1.PullIfNotPresent))
	Expect(e.Spec.Service.Type).To(BeEquivalentTo("ClusterIP"))
	Expect(e.Spec.Service.Port).To(BeEquivalentTo(80))
	Expect(e.Spec.Persistence.Size.String()).To(Equal("1Gi"))
	Expect(e.Spec.Persistence.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))

	err := tryUpdateSpec(key, func(s *echov1alpha1.EchoSpec) { s.Persistence.StorageClassName = ptr.To("slow") })
	Expect(err).To(MatchError(ContainSubstring("persistence.storageClassName cannot change once set")))

	err = tryUpdateSpec(key, func(s *echov1alpha1.EchoSpec) {
		s.Persistence.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	})
	Expect(err).To(MatchError(ContainSubstring("persistence.accessModes cannot change")))
}

// tryUpdateSpec changes the latest spec of an Echo and returns the API
// server's verdict, retrying only on write conflicts.
func tryUpdateSpec(key types.NamespacedName, mutate func(*echov1alpha1.EchoSpec)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		e := &echov1alpha1.Echo{}
		if err := k8sClient.Get(context.Background(), key, e); err != nil {
			return err
		}
		mutate(&e.Spec)
		return k8sClient.Update(context.Background(), e)
	})
}

// preferredTerms is the preferred scheduling terms of an affinity, with
// one term of the given weight; term is the field that holds the term.
func preferredTerms(term string, weight int64) map[string]any {
	terms := map[string]any{
		"preference":      map[string]any{"matchExpressions": []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a"}}}},
		"podAffinityTerm": map[string]any{"topologyKey": "kubernetes.io/hostname"},
	}
	return map[string]any{"preferredDuringSchedulingIgnoredDuringExecution": []any{
		map[string]any{"weight": weight, term: terms[term]},
	}}
}

func echoObject(ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	if spec == nil {
		u.Object["spec"] = map[string]any{}
	}
	u.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("Echo"))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}
