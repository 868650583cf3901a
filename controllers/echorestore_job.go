package controllers

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/names"
)

// The Jobs of an EchoRestore: inspect, which checks the backup and hands
// back the backed-up Echo, and restore, which writes the data.

// Limits of the restore's Jobs, besides the restore's own spec.timeout.
const (
	inspectJobLimit = 10 * time.Minute
	// restoreJobLimit is the longest spec.timeout: the restore Job may
	// take all of it.
	restoreJobLimit = 720 * time.Hour
)

// restoreSource is where a restore reads its artifact, resolved from an
// EchoBackup or taken from the restore's own spec.
type restoreSource struct {
	storage  echov1alpha1.BackupStorage
	key      string
	echoName string // the Echo to restore into
	// location is the EchoBackupLocation the storage came from, whose
	// mover settings the restore's Jobs inherit; nil for none.
	location *echov1alpha1.EchoBackupLocation
}

// resolved takes the source's storage as resolveStorage resolved it, and
// the location it named, if any: a stored backup's storage is its
// location's already, and keeps that location.
func (src *restoreSource) resolved(storage echov1alpha1.BackupStorage, loc *echov1alpha1.EchoBackupLocation) {
	src.storage = storage
	if loc != nil {
		src.location = loc
	}
}

// inspectJobName is the name of the Job that reads a restore's manifest.
func inspectJobName(rs *echov1alpha1.EchoRestore) string { return names.Child(rs.Name, "inspect") }

// restoreJobName is the name of the Job that writes a restore's data.
func restoreJobName(rs *echov1alpha1.EchoRestore) string { return names.Child(rs.Name, "restore") }

func restoreLabels(rs *echov1alpha1.EchoRestore, echoName string) map[string]string {
	return moverLabels("echo-restore", echoName, echov1alpha1.RestoreLabel, rs.Name)
}

// inspectJob is the Job that reads and checks a backup's manifest and hands
// back the backed-up Echo, before a restore touches anything. It mounts the
// storage only.
func inspectJob(rs *echov1alpha1.EchoRestore, src restoreSource, m moverSettings) *batchv1.Job {
	args := []string{moverprotocol.Arg(moverprotocol.FlagKey, src.key)}
	pod := moverPod(m, moverprotocol.Inspect, args, src.storage, nil, nil, storeClientResources)
	return moverJob(m, rs.Namespace, inspectJobName(rs), restoreLabels(rs, src.echoName), jobDeadline(rs, inspectJobLimit), pod)
}

// restoreJob is the Job that puts a backup's data into the Echo's claim,
// mounted read-write while the Echo runs no pod. The data mover verifies
// the whole archive in a staging directory before it swaps it in; for a
// restore test it also reads every restored file back from the claim. The
// restore's UID lets a retry recognise the data its earlier attempt
// swapped in (and was stopped before reporting) as its own.
func restoreJob(rs *echov1alpha1.EchoRestore, src restoreSource, echo *echov1alpha1.Echo, m moverSettings) *batchv1.Job {
	args := []string{
		moverprotocol.Arg(moverprotocol.FlagDataDir, dataMountPath),
		moverprotocol.Arg(moverprotocol.FlagKey, src.key),
		moverprotocol.Arg(moverprotocol.FlagExistingData, string(existingDataPolicy(rs))),
		moverprotocol.Arg(moverprotocol.FlagRestoreID, string(rs.UID)),
	}
	if restoreTestOf(rs) != "" {
		// A restore test proves the data reads back as backed up.
		args = append(args, moverprotocol.Switch(moverprotocol.FlagVerify))
	}
	pod := moverPod(m, moverprotocol.Restore, args, src.storage,
		[]corev1.Volume{dataVolume(echo, false)}, []corev1.VolumeMount{dataMount(false)}, dataMoverResources)
	pod.NodeSelector = echov1alpha1.CoreNodeSelector(echo.Spec.NodeSelector)
	pod.Tolerations = echov1alpha1.CoreTolerations(echo.Spec.Tolerations)
	return moverJob(m, rs.Namespace, restoreJobName(rs), restoreLabels(rs, echo.Name), jobDeadline(rs, restoreJobLimit), pod)
}

func existingDataPolicy(rs *echov1alpha1.EchoRestore) echov1alpha1.ExistingDataPolicy {
	if rs.Spec.ExistingData == "" {
		return echov1alpha1.ExistingDataFail
	}
	return rs.Spec.ExistingData
}
