package controllers

import (
	corev1 "k8s.io/api/core/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// Where a data mover pod runs, and with what resources: the mover settings
// (spec.mover) of the backup or restore it works for, field by field, else
// those of the EchoBackupLocation its storage names, else the defaults its
// Job's builder sets. Nothing is read for them beyond the object and its
// location, both of the Job's namespace; and they reach only the pod's
// resources and scheduling, never its security context, volumes or
// command.

// moverFor is what the data mover pods of an object run with: the
// operator's image and environment, placed by the object's own settings
// (own) over its location's (loc, nil for none).
func moverFor(image string, env []corev1.EnvVar, own *echov1alpha1.MoverSettings, loc *echov1alpha1.EchoBackupLocation) moverSettings {
	return moverSettings{image: image, env: env, placement: effectiveMover(own, locationMover(loc))}
}

// locationMover is a location's mover settings; nil for no location.
func locationMover(loc *echov1alpha1.EchoBackupLocation) *echov1alpha1.MoverSettings {
	if loc == nil {
		return nil
	}
	return loc.Spec.Mover
}

// effectiveMover merges mover settings field by field: each field is the
// first layer's that sets it. An empty map, list or object sets nothing.
func effectiveMover(layers ...*echov1alpha1.MoverSettings) echov1alpha1.MoverSettings {
	var out echov1alpha1.MoverSettings
	for _, s := range layers {
		if s == nil {
			continue
		}
		if out.Resources == nil && s.Resources != nil && len(s.Resources.Requests)+len(s.Resources.Limits) > 0 {
			out.Resources = s.Resources
		}
		if len(out.NodeSelector) == 0 {
			out.NodeSelector = s.NodeSelector
		}
		if len(out.Tolerations) == 0 {
			out.Tolerations = s.Tolerations
		}
		if out.Affinity == nil && s.Affinity != nil && *s.Affinity != (echov1alpha1.Affinity{}) {
			out.Affinity = s.Affinity
		}
		if out.PriorityClassName == "" {
			out.PriorityClassName = s.PriorityClassName
		}
	}
	return out
}

// place applies the settings to a mover pod built with its defaults: each
// field set replaces the pod's, except the affinity, which joins the
// affinity the pod's data needs (dataAffinity).
func place(pod *corev1.PodSpec, s echov1alpha1.MoverSettings) {
	if s.Resources != nil {
		for i := range pod.Containers {
			if pod.Containers[i].Name == moverprotocol.ContainerName {
				pod.Containers[i].Resources = s.Resources.Core()
			}
		}
	}
	if len(s.NodeSelector) > 0 {
		pod.NodeSelector = echov1alpha1.CoreNodeSelector(s.NodeSelector)
	}
	if len(s.Tolerations) > 0 {
		pod.Tolerations = echov1alpha1.CoreTolerations(s.Tolerations)
	}
	if s.Affinity != nil {
		pod.Affinity = joinPodAffinity(pod.Affinity, echov1alpha1.CoreAffinity(s.Affinity))
	}
	if s.PriorityClassName != "" {
		pod.PriorityClassName = s.PriorityClassName
	}
}

// joinPodAffinity is the settings' affinity with the required pod affinity
// terms of the data's (dataAffinity, which holds nothing else) before its
// own: a ReadWriteOnce claim in use mounts only on its node, whatever else
// the pod prefers.
func joinPodAffinity(data, settings *corev1.Affinity) *corev1.Affinity {
	if data == nil || data.PodAffinity == nil {
		return settings
	}
	out := settings.DeepCopy()
	if out.PodAffinity == nil {
		out.PodAffinity = &corev1.PodAffinity{}
	}
	out.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution = append(
		data.PodAffinity.DeepCopy().RequiredDuringSchedulingIgnoredDuringExecution,
		out.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
	return out
}
