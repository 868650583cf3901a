package chartvalues

import (
	"cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Defaults applied when the Echo leaves a field out. The API server applies
// the schema defaults; these cover what a schema default cannot express.
var (
	DefaultResources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("10m"),
			corev1.ResourceMemory: resource.MustParse("32Mi"),
		},
		Limits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("200m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		},
	}
)

// Values mirrors the values contract of helm-charts/echo. Every field
// is always set, so the chart renders the same way whatever its defaults.
type Values struct {
	Replicas         int32                              `json:"replicas"`
	Image            string                             `json:"image"`
	ImagePullPolicy  corev1.PullPolicy                  `json:"imagePullPolicy"`
	ImagePullSecrets []corev1.LocalObjectReference      `json:"imagePullSecrets"`
	Message          string                             `json:"message"`
	Port             int32                              `json:"port"`
	Resources        corev1.ResourceRequirements        `json:"resources"`
	Service          Service                            `json:"service"`
	Ingress          Ingress                            `json:"ingress"`
	HighAvailability Enabled                            `json:"highAvailability"`
	Autoscaling      Autoscaling                        `json:"autoscaling"`
	Persistence      Persistence                        `json:"persistence"`
	NodeSelector     map[string]echov1alpha1.LabelValue `json:"nodeSelector"`
	Tolerations      []echov1alpha1.Toleration          `json:"tolerations"`
	Affinity         *echov1alpha1.Affinity             `json:"affinity"`
	PodAnnotations   map[string]string                  `json:"podAnnotations"`
	Quiesced         bool                               `json:"quiesced"`
	SpecGeneration   int64                              `json:"specGeneration"`
}

// Service is the values of the Service.
type Service struct {
	Type        string            `json:"type"`
	Port        int32             `json:"port"`
	Annotations map[string]string `json:"annotations"`
}

// Ingress is the values of the Ingress.
type Ingress struct {
	Enabled       bool   `json:"enabled"`
	ClassName     string `json:"className"`
	Host          string `json:"host"`
	TLSSecretName string `json:"tlsSecretName"`
}

// Enabled is the values of a feature that is only on or off.
type Enabled struct {
	Enabled bool `json:"enabled"`
}

// Autoscaling is the values of the HorizontalPodAutoscaler.
type Autoscaling struct {
	Enabled                        bool  `json:"enabled"`
	MinReplicas                    int32 `json:"minReplicas"`
	MaxReplicas                    int32 `json:"maxReplicas"`
	TargetCPUUtilizationPercentage int32 `json:"targetCPUUtilizationPercentage"`
}

// Persistence is the values of the journal's PersistentVolumeClaim.
type Persistence struct {
	Enabled          bool                                `json:"enabled"`
	Size             string                              `json:"size"`
	StorageClassName string                              `json:"storageClassName"`
	AccessModes      []corev1.PersistentVolumeAccessMode `json:"accessModes"`
}

// FromEcho builds the chart values of an Echo, with defaultImage when it
// names no image. It is pure: the same Echo always gives the same values,
// so an unchanged Echo renders an unchanged release.
func FromEcho(echo *echov1alpha1.Echo, defaultImage string) Values {
	spec := echo.Spec
	replicas := spec.DesiredReplicas()
	v := Values{
		Replicas:         replicas.Replicas,
		Image:            cmp.Or(spec.Image, defaultImage),
		ImagePullPolicy:  cmp.Or(spec.ImagePullPolicy, corev1.PullIfNotPresent),
		ImagePullSecrets: orEmpty(spec.ImagePullSecrets),
		Message:          spec.Message,
		Port:             cmp.Or(spec.Port, 8080),
		Resources:        DefaultResources,
		Service: Service{
			Type:        string(cmp.Or(spec.Service.Type, echov1alpha1.ServiceType(corev1.ServiceTypeClusterIP))),
			Port:        cmp.Or(spec.Service.Port, 80),
			Annotations: orEmptyMap(spec.Service.Annotations),
		},
		Autoscaling:    Autoscaling{MinReplicas: replicas.MinReplicas, MaxReplicas: replicas.MaxReplicas, TargetCPUUtilizationPercentage: 80},
		Persistence:    Persistence{Size: "1Gi", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
		NodeSelector:   orEmptyMap(spec.NodeSelector),
		Tolerations:    orEmpty(spec.Tolerations),
		Affinity:       spec.Affinity,
		PodAnnotations: orEmptyMap(spec.PodAnnotations),
		Quiesced:       echo.Annotations[echov1alpha1.RestoreAnnotation] != "",
		SpecGeneration: echo.Generation,
	}
	if spec.Resources != nil {
		v.Resources = spec.Resources.Core()
	}
	if in := spec.Ingress; in != nil {
		v.Ingress = Ingress{Enabled: in.Enabled, ClassName: in.ClassName, Host: in.Host, TLSSecretName: in.TLSSecretName}
	}
	if ha := spec.HighAvailability; ha != nil {
		v.HighAvailability.Enabled = ha.Enabled
	}
	if as := spec.Autoscaling; as != nil {
		v.Autoscaling.Enabled = as.Enabled
		v.Autoscaling.TargetCPUUtilizationPercentage = cmp.Or(as.TargetCPUUtilizationPercentage, 80)
	}
	if p := spec.Persistence; p != nil {
		v.Persistence.Enabled = p.Enabled
		if p.Size != nil && !p.Size.IsZero() {
			v.Persistence.Size = p.Size.String()
		}
		v.Persistence.StorageClassName = ptr.Deref(p.StorageClassName, "")
		if len(p.AccessModes) > 0 {
			v.Persistence.AccessModes = p.AccessModes
		}
	}
	return v
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func orEmptyMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return m
}

// Spec is the spec of an Echo that renders into v, whatever the default
// image: every field the values carry is set explicitly. FromEcho of an
// Echo with that spec gives v again, up to Quiesced and SpecGeneration,
// which come from the Echo's metadata. The spec's backup policy, which
// the values do not carry, is left out.
func (v Values) Spec() echov1alpha1.EchoSpec {
	return echov1alpha1.EchoSpec{
		Replicas:         ptr.To(v.Replicas),
		Image:            v.Image,
		ImagePullPolicy:  v.ImagePullPolicy,
		ImagePullSecrets: nilIfEmpty(v.ImagePullSecrets),
		Message:          v.Message,
		Port:             v.Port,
		Resources:        &echov1alpha1.ResourceRequirements{Limits: boundedList(v.Resources.Limits), Requests: boundedList(v.Resources.Requests)},
		Service: echov1alpha1.ServiceSpec{
			Type:        echov1alpha1.ServiceType(v.Service.Type),
			Port:        v.Service.Port,
			Annotations: nilIfEmptyMap(v.Service.Annotations),
		},
		Ingress: &echov1alpha1.IngressSpec{Enabled: v.Ingress.Enabled, ClassName: v.Ingress.ClassName, Host: v.Ingress.Host,
			TLSSecretName: v.Ingress.TLSSecretName},
		HighAvailability: &echov1alpha1.HighAvailabilitySpec{Enabled: v.HighAvailability.Enabled},
		Autoscaling: &echov1alpha1.AutoscalingSpec{Enabled: v.Autoscaling.Enabled, MinReplicas: v.Autoscaling.MinReplicas,
			MaxReplicas: v.Autoscaling.MaxReplicas, TargetCPUUtilizationPercentage: v.Autoscaling.TargetCPUUtilizationPercentage},
		Persistence:    v.Persistence.spec(),
		NodeSelector:   nilIfEmptyMap(v.NodeSelector),
		Tolerations:    nilIfEmpty(v.Tolerations),
		Affinity:       v.Affinity,
		PodAnnotations: nilIfEmptyMap(v.PodAnnotations),
	}
}

func (p Persistence) spec() *echov1alpha1.PersistenceSpec {
	s := &echov1alpha1.PersistenceSpec{Enabled: p.Enabled, AccessModes: nilIfEmpty(p.AccessModes)}
	if size, err := echov1alpha1.NewBoundedQuantity(p.Size); err == nil {
		s.Size = &size
	}
	if p.StorageClassName != "" {
		s.StorageClassName = ptr.To(p.StorageClassName)
	}
	return s
}

func boundedList(in corev1.ResourceList) map[corev1.ResourceName]echov1alpha1.BoundedQuantity {
	if len(in) == 0 {
		return nil
	}
	out := make(map[corev1.ResourceName]echov1alpha1.BoundedQuantity, len(in))
	for name, q := range in {
		out[name] = echov1alpha1.BoundedQuantity{Quantity: q.DeepCopy()}
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func nilIfEmptyMap[V any](m map[string]V) map[string]V {
	if len(m) == 0 {
		return nil
	}
	return m
}
