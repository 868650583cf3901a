package controllers

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// An Echo's data, as the data mover Jobs reach it: the claim the chart
// creates when persistence is enabled, mounted at dataMountPath.

// persistent reports whether an Echo keeps data in a claim.
func persistent(echo *echov1alpha1.Echo) bool {
	return echo.Spec.Persistence != nil && echo.Spec.Persistence.Enabled
}

// dataClaimName is the claim the chart creates for an Echo's data.
func dataClaimName(echo *echov1alpha1.Echo) string { return chart.DataClaimName(echo.Name) }

// dataVolume is the Echo's data claim, read-only or not, or an empty
// directory for an Echo without persistence (whose backup holds its
// configuration only).
func dataVolume(echo *echov1alpha1.Echo, readOnly bool) corev1.Volume {
	if !persistent(echo) {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
		ClaimName: dataClaimName(echo), ReadOnly: readOnly}}}
}

// dataMount mounts dataVolume at dataMountPath.
func dataMount(readOnly bool) corev1.VolumeMount {
	return corev1.VolumeMount{Name: "data", MountPath: dataMountPath, ReadOnly: readOnly}
}

// dataAffinity places a Job beside the Echo's pods when they hold its
// ReadWriteOnce claim, which only their node can mount.
func dataAffinity(echo *echov1alpha1.Echo) *corev1.Affinity {
	if !persistent(echo) || slices.Contains(echo.Spec.Persistence.AccessModes, corev1.ReadWriteMany) || echo.Status.ReadyReplicas == 0 {
		return nil
	}
	return &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: chart.SelectorLabels(echo.Name)},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
}
