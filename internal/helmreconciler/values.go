package helmreconciler

import (
	"cmp"
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Defaults applied when the Echo leaves a field out. The API server applies
// the schema defaults; these cover what a schema default cannot express.
var (
	defaultResources = corev1.ResourceRequirements{
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

// chartValues mirrors the values contract of helm-charts/echo. Every field
// is always set, so the chart renders the same way whatever its defaults.
type chartValues struct {
	Replicas         int32                         `json:"replicas"`
	Image            string                        `json:"image"`
	ImagePullPolicy  corev1.PullPolicy             `json:"imagePullPolicy"`
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets"`
	Message          string                        `json:"message"`
	Port             int32                         `json:"port"`
	Resources        corev1.ResourceRequirements   `json:"resources"`
	Service          serviceValues                 `json:"service"`
	Ingress          ingressValues                 `json:"ingress"`
	HighAvailability enabledValues                 `json:"highAvailability"`
	Autoscaling      autoscalingValues             `json:"autoscaling"`
	Persistence      persistenceValues             `json:"persistence"`
	NodeSelector     map[string]string             `json:"nodeSelector"`
	Tolerations      []corev1.Toleration           `json:"tolerations"`
	Affinity         *corev1.Affinity              `json:"affinity"`
	PodAnnotations   map[string]string             `json:"podAnnotations"`
	Quiesced         bool                          `json:"quiesced"`
	SpecGeneration   int64                         `json:"specGeneration"`
}

type serviceValues struct {
	Type        string            `json:"type"`
	Port        int32             `json:"port"`
	Annotations map[string]string `json:"annotations"`
}

type ingressValues struct {
	Enabled       bool   `json:"enabled"`
	ClassName     string `json:"className"`
	Host          string `json:"host"`
	TLSSecretName string `json:"tlsSecretName"`
}

type enabledValues struct {
	Enabled bool `json:"enabled"`
}

type autoscalingValues struct {
	Enabled                        bool  `json:"enabled"`
	MinReplicas                    int32 `json:"minReplicas"`
	MaxReplicas                    int32 `json:"maxReplicas"`
	TargetCPUUtilizationPercentage int32 `json:"targetCPUUtilizationPercentage"`
}

type persistenceValues struct {
	Enabled          bool                                `json:"enabled"`
	Size             string                              `json:"size"`
	StorageClassName string                              `json:"storageClassName"`
	AccessModes      []corev1.PersistentVolumeAccessMode `json:"accessModes"`
}

// EchoTranslator turns an Echo into the values of the echo chart.
type EchoTranslator struct {
	// DefaultImage is used when the Echo names no image (RELATED_IMAGE_ECHO).
	DefaultImage string
}

// Translate implements values.Translator.
func (t EchoTranslator) Translate(_ context.Context, u *unstructured.Unstructured) (chartutil.Values, error) {
	echo := &echov1alpha1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, echo); err != nil {
		return nil, fmt.Errorf("decoding Echo %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	vals, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptrTo(t.values(echo)))
	if err != nil {
		return nil, fmt.Errorf("encoding chart values: %w", err)
	}
	dropResourceClaims(vals)
	return vals, nil
}

// dropResourceClaims keeps dynamic resource claims, which the echo server
// has no use for, away from the chart.
func dropResourceClaims(vals map[string]any) {
	if res, ok := vals["resources"].(map[string]any); ok {
		delete(res, "claims")
	}
}

// values builds the chart values of an Echo. It is pure: the same Echo
// always gives the same values, so an unchanged Echo renders an unchanged
// release.
func (t EchoTranslator) values(echo *echov1alpha1.Echo) chartValues {
	spec := echo.Spec
	v := chartValues{
		Replicas:         ptr.Deref(spec.Replicas, 1),
		Image:            cmp.Or(spec.Image, t.DefaultImage),
		ImagePullPolicy:  cmp.Or(spec.ImagePullPolicy, corev1.PullIfNotPresent),
		ImagePullSecrets: orEmpty(spec.ImagePullSecrets),
		Message:          spec.Message,
		Port:             cmp.Or(spec.Port, 8080),
		Resources:        defaultResources,
		Service: serviceValues{
			Type:        string(cmp.Or(spec.Service.Type, echov1alpha1.ServiceType(corev1.ServiceTypeClusterIP))),
			Port:        cmp.Or(spec.Service.Port, 80),
			Annotations: orEmptyMap(spec.Service.Annotations),
		},
		Autoscaling:    autoscalingValues{MinReplicas: 1, MaxReplicas: 5, TargetCPUUtilizationPercentage: 80},
		Persistence:    persistenceValues{Size: "1Gi", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}},
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
		v.Ingress = ingressValues{Enabled: in.Enabled, ClassName: in.ClassName, Host: in.Host, TLSSecretName: in.TLSSecretName}
	}
	if ha := spec.HighAvailability; ha != nil {
		v.HighAvailability.Enabled = ha.Enabled
	}
	if as := spec.Autoscaling; as != nil {
		v.Autoscaling = autoscalingValues{
			Enabled:                        as.Enabled,
			MinReplicas:                    cmp.Or(as.MinReplicas, 1),
			MaxReplicas:                    cmp.Or(as.MaxReplicas, 5),
			TargetCPUUtilizationPercentage: cmp.Or(as.TargetCPUUtilizationPercentage, 80),
		}
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

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func ptrTo[T any](v T) *T { return &v }
