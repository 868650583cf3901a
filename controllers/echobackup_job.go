package controllers

import (
	"cmp"
	"path"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/names"
)

// The children of an EchoBackup: the backup Job with the ConfigMap it
// reads, and the Job that deletes the backup's artifact.

const (
	backupDeadline = int64(3600)
	deleteDeadline = int64(600)
	deleteJobTTL   = int32(3600)
)

// backupJobName is the name of the Job that runs a backup.
func backupJobName(b *echov1alpha1.EchoBackup) string { return names.Child(b.Name, "backup") }

// deleteJobName is the name of the Job that deletes a backup's artifact.
func deleteJobName(b *echov1alpha1.EchoBackup) string { return names.Child(b.Name, "delete") }

// backupConfigName is the name of the ConfigMap that carries the
// configuration a backup captures.
func backupConfigName(b *echov1alpha1.EchoBackup) string { return names.Child(b.Name, "config") }

// artifactKey is where in the storage a backup's artifact lives.
func artifactKey(b *echov1alpha1.EchoBackup) string {
	return path.Join(b.Namespace, b.Spec.EchoName, b.Name)
}

func backupLabels(b *echov1alpha1.EchoBackup) map[string]string {
	return moverLabels("echo-backup", b.Spec.EchoName, echov1alpha1.BackupLabel, b.Name)
}

// backupConfigMap is the ConfigMap holding the configuration to back up.
func backupConfigMap(b *echov1alpha1.EchoBackup, config []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: backupConfigName(b), Namespace: b.Namespace, Labels: backupLabels(b)},
		Data:       map[string]string{configFileName: string(config)},
	}
}

// backupJob is the Job that backs up an Echo with the operator's image to
// storage, the backup's resolved (resolveStorage). The data volume is
// mounted read-only; a ReadWriteOnce volume in use is
// only reachable from its node, so the Job then joins the Echo's pods there.
func backupJob(b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo, storage echov1alpha1.BackupStorage, m moverSettings) *batchv1.Job {
	args := []string{
		moverprotocol.Arg(moverprotocol.FlagDataDir, dataMountPath),
		moverprotocol.Arg(moverprotocol.FlagKey, artifactKey(b)),
		moverprotocol.CompressionArg(string(cmp.Or(b.Spec.Compression, echov1alpha1.CompressionGzip))),
		moverprotocol.Arg(moverprotocol.FlagConfigFile, path.Join(configMountPath, configFileName)),
		moverprotocol.Arg(moverprotocol.FlagSourceNamespace, echo.Namespace),
		moverprotocol.Arg(moverprotocol.FlagSourceName, echo.Name),
		moverprotocol.Arg(moverprotocol.FlagSourceUID, string(echo.UID)),
		moverprotocol.Arg(moverprotocol.FlagBackupID, string(b.UID)),
	}
	volumes := []corev1.Volume{
		{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: backupConfigName(b)}}}},
		dataVolume(echo, true),
	}
	mounts := []corev1.VolumeMount{
		{Name: "config", MountPath: configMountPath, ReadOnly: true},
		dataMount(true),
	}
	pod := moverPod(m, moverprotocol.Backup, args, storage, volumes, mounts, dataMoverResources)
	pod.Affinity = dataAffinity(echo)
	pod.NodeSelector = echov1alpha1.CoreNodeSelector(echo.Spec.NodeSelector)
	pod.Tolerations = echov1alpha1.CoreTolerations(echo.Spec.Tolerations)
	return moverJob(m, b.Namespace, backupJobName(b), backupLabels(b), backupDeadline, pod)
}

// deleteJob is the Job that deletes a backup's artifact from storage, the
// backup's resolved, with the operator's image. It mounts the storage as the backup Job does, and
// nothing of the Echo, which may be gone.
//
// The EchoBackup does not own it: the Job runs while the EchoBackup is
// being deleted, when the garbage collector may be removing everything it
// owns (a foreground deletion deletes every dependent, even one created
// after the deletion began). The controller deletes the Job itself once
// the EchoBackup is let go; its TTL cleans up after an EchoBackup whose
// finalizer was removed by hand.
func deleteJob(b *echov1alpha1.EchoBackup, storage echov1alpha1.BackupStorage, m moverSettings) *batchv1.Job {
	return deleteJobNamed(b, deleteJobName(b), storage, m)
}

// deleteJobNamed is deleteJob under another name: the Jobs deleting the
// copies of a backup (copyDeleteJobName) are made alike.
func deleteJobNamed(b *echov1alpha1.EchoBackup, name string, storage echov1alpha1.BackupStorage, m moverSettings) *batchv1.Job {
	args := []string{moverprotocol.Arg(moverprotocol.FlagKey, artifactKey(b))}
	pod := moverPod(m, moverprotocol.Delete, args, storage, nil, nil, storeClientResources)
	job := moverJob(m, b.Namespace, name, backupLabels(b), deleteDeadline, pod)
	job.Annotations = map[string]string{echov1alpha1.BackupUIDAnnotation: string(b.UID)}
	job.Spec.TTLSecondsAfterFinished = ptr.To(deleteJobTTL)
	return job
}
