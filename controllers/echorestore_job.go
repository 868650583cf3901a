package controllers

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// RestoreLabel marks the Jobs of an EchoRestore with its name.
const RestoreLabel = "echo.dev/restore"

const (
	inspectDeadline = int64(600)
	restoreDeadline = int64(3600)
)

// restoreSource is where a restore reads its artifact, resolved from an
// EchoBackup or taken from the restore's own spec.
type restoreSource struct {
	storage  echov1alpha1.BackupStorage
	key      string
	echoName string // the Echo to restore into
}

// inspectJobName is the name of the Job that reads a restore's manifest.
func inspectJobName(rs *echov1alpha1.EchoRestore) string { return childName(rs.Name, "inspect") }

// restoreJobName is the name of the Job that writes a restore's data.
func restoreJobName(rs *echov1alpha1.EchoRestore) string { return childName(rs.Name, "restore") }

func restoreLabels(rs *echov1alpha1.EchoRestore, echoName string) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "echo-restore",
		"app.kubernetes.io/instance":  echoName,
		"app.kubernetes.io/component": "data-mover",
		ManagedByLabel:                ManagedByValue,
		RestoreLabel:                  rs.Name,
	}
}

// inspectJob is the Job that reads and checks a backup's manifest and hands
// back the backed-up Echo, before a restore touches anything. It mounts the
// storage only.
func inspectJob(rs *echov1alpha1.EchoRestore, src restoreSource, image string) *batchv1.Job {
	storeArgs, env, volumes, mounts := storageMount(src.storage)
	args := append([]string{"inspect", "--key=" + src.key}, storeArgs...)
	volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})
	pod := moverPod(image, args, env, volumes, mounts, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	})
	return restoreMoverJob(rs, src.echoName, inspectJobName(rs), inspectDeadline, pod)
}

// restoreJob is the Job that puts a backup's data into the Echo's claim,
// mounted read-write while the Echo runs no pod. The data mover verifies
// the whole archive in a staging directory before it swaps it in.
func restoreJob(rs *echov1alpha1.EchoRestore, src restoreSource, echo *echov1alpha1.Echo, image string) *batchv1.Job {
	args := []string{
		"restore",
		"--data-dir=" + dataMountPath,
		"--key=" + src.key,
		"--existing-data=" + string(existingDataPolicy(rs)),
	}
	storeArgs, env, volumes, mounts := storageMount(src.storage)
	args = append(args, storeArgs...)
	volumes = append(volumes,
		corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: dataClaimName(echo)}}},
	)
	mounts = append(mounts,
		corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"},
		corev1.VolumeMount{Name: "data", MountPath: dataMountPath},
	)
	pod := moverPod(image, args, env, volumes, mounts, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	})
	pod.NodeSelector = echo.Spec.NodeSelector
	pod.Tolerations = echo.Spec.Tolerations
	return restoreMoverJob(rs, echo.Name, restoreJobName(rs), restoreDeadline, pod)
}

func restoreMoverJob(rs *echov1alpha1.EchoRestore, echoName, name string, deadline int64, pod corev1.PodSpec) *batchv1.Job {
	labels := restoreLabels(rs, echoName)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rs.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(backupRetries),
			PodFailurePolicy:      moverFailurePolicy(),
			ActiveDeadlineSeconds: ptr.To(deadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod,
			},
		},
	}
}

func existingDataPolicy(rs *echov1alpha1.EchoRestore) echov1alpha1.ExistingDataPolicy {
	if rs.Spec.ExistingData == "" {
		return echov1alpha1.ExistingDataFail
	}
	return rs.Spec.ExistingData
}

// dataClaimName is the claim the chart creates for an Echo's data.
func dataClaimName(echo *echov1alpha1.Echo) string { return echo.Name + "-data" }
