package controllers

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// Labels and paths shared by the data mover Jobs.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "echo-operator"
	BackupLabel    = "echo.dev/backup"
	// BackupUIDAnnotation ties a delete Job to the EchoBackup it serves,
	// which its name alone does not: a name is reused once its EchoBackup
	// is gone.
	BackupUIDAnnotation = "echo.dev/backup-uid"

	moverContainer   = "mover"
	dataMountPath    = "/data"
	configMountPath  = "/config"
	storeMountPath   = "/backup"
	caMountPath      = "/etc/echo-backup/ca"
	configFileName   = "config.json"
	caFileName       = "ca.crt"
	backupDeadline   = int64(3600)
	backupRetries    = int32(2)
	deleteDeadline   = int64(600)
	deleteJobTTL     = int32(3600)
	moverUserID      = int64(65532)
	maxObjectNameLen = 63
)

// childName derives a deterministic name for an object a backup or
// restore owns: parent name and suffix, shortened with a hash when the
// result would not fit a label value.
func childName(parent, suffix string) string {
	name := parent + "-" + suffix
	if len(name) <= maxObjectNameLen {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	hash := hex.EncodeToString(sum[:])[:8]
	keep := maxObjectNameLen - len(suffix) - len(hash) - 2
	return strings.TrimRight(parent[:keep], "-.") + "-" + hash + "-" + suffix
}

// backupJobName is the name of the Job that runs a backup.
func backupJobName(b *echov1alpha1.EchoBackup) string { return childName(b.Name, "backup") }

// deleteJobName is the name of the Job that deletes a backup's artifact.
func deleteJobName(b *echov1alpha1.EchoBackup) string { return childName(b.Name, "delete") }

// backupConfigName is the name of the ConfigMap that carries the
// configuration a backup captures.
func backupConfigName(b *echov1alpha1.EchoBackup) string { return childName(b.Name, "config") }

// artifactKey is where in the storage a backup's artifact lives.
func artifactKey(b *echov1alpha1.EchoBackup) string {
	return path.Join(b.Namespace, b.Spec.EchoName, b.Name)
}

func moverLabels(b *echov1alpha1.EchoBackup) map[string]string {
	return map[string]string{
		"app.kubernetes.io/name":      "echo-backup",
		"app.kubernetes.io/instance":  b.Spec.EchoName,
		"app.kubernetes.io/component": "data-mover",
		ManagedByLabel:                ManagedByValue,
		BackupLabel:                   b.Name,
	}
}

// backupConfigMap is the ConfigMap holding the configuration to back up.
func backupConfigMap(b *echov1alpha1.EchoBackup, config []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: backupConfigName(b), Namespace: b.Namespace, Labels: moverLabels(b)},
		Data:       map[string]string{configFileName: string(config)},
	}
}

// backupJob is the Job that backs up an Echo with the operator's image.
// The data volume is mounted read-only; a ReadWriteOnce volume in use is
// only reachable from its node, so the Job then joins the Echo's pods there.
func backupJob(b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo, image string) *batchv1.Job {
	args := []string{
		"backup",
		"--data-dir=" + dataMountPath,
		"--key=" + artifactKey(b),
		"--compression=" + strings.ToLower(string(cmp.Or(b.Spec.Compression, echov1alpha1.CompressionGzip))),
		"--config-file=" + path.Join(configMountPath, configFileName),
		"--source-namespace=" + echo.Namespace,
		"--source-name=" + echo.Name,
		"--source-uid=" + string(echo.UID),
	}
	storeArgs, env, volumes, mounts := storageMount(b.Spec.Storage)
	args = append(args, storeArgs...)

	volumes = append(volumes,
		corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: backupConfigName(b)}}}},
		corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		dataVolume(echo),
	)
	mounts = append(mounts,
		corev1.VolumeMount{Name: "config", MountPath: configMountPath, ReadOnly: true},
		corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"},
		corev1.VolumeMount{Name: "data", MountPath: dataMountPath, ReadOnly: true},
	)

	pod := moverPod(image, args, env, volumes, mounts, corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	})
	pod.Affinity = dataAffinity(echo)
	pod.NodeSelector = echo.Spec.NodeSelector
	pod.Tolerations = echo.Spec.Tolerations

	labels := moverLabels(b)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: backupJobName(b), Namespace: b.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(backupRetries),
			PodFailurePolicy:      moverFailurePolicy(),
			ActiveDeadlineSeconds: ptr.To(backupDeadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod,
			},
		},
	}
}

// deleteJob is the Job that deletes a backup's artifact with the
// operator's image. It mounts the storage as the backup Job does, and
// nothing of the Echo, which may be gone.
//
// The EchoBackup does not own it: the Job runs while the EchoBackup is
// being deleted, when the garbage collector may be removing everything it
// owns (a foreground deletion deletes every dependent, even one created
// after the deletion began). The controller deletes the Job itself once
// the EchoBackup is let go; its TTL cleans up after an EchoBackup whose
// finalizer was removed by hand.
func deleteJob(b *echov1alpha1.EchoBackup, image string) *batchv1.Job {
	storeArgs, env, volumes, mounts := storageMount(b.Spec.Storage)
	args := append([]string{"delete", "--key=" + artifactKey(b)}, storeArgs...)
	volumes = append(volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"})

	labels := moverLabels(b)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: deleteJobName(b), Namespace: b.Namespace, Labels: labels,
			Annotations: map[string]string{BackupUIDAnnotation: string(b.UID)}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(backupRetries),
			PodFailurePolicy:        moverFailurePolicy(),
			ActiveDeadlineSeconds:   ptr.To(deleteDeadline),
			TTLSecondsAfterFinished: ptr.To(deleteJobTTL),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: moverPod(image, args, env, volumes, mounts, corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				}),
			},
		},
	}
}

// moverExitPermanent is the data mover's exit code for a failure that
// retrying cannot fix.
const moverExitPermanent = 2

// moverFailurePolicy fails a data mover Job at once on a permanent failure,
// and leaves the others to the Job's retries.
func moverFailurePolicy() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
			ContainerName: ptr.To(moverContainer),
			Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
			Values:        []int32{moverExitPermanent},
		},
	}}}
}

// moverPod is the pod of a data mover Job: the operator's image, run once
// under the restricted Pod Security Standard, reporting its result as its
// termination message.
func moverPod(image string, args []string, env []corev1.EnvVar, volumes []corev1.Volume, mounts []corev1.VolumeMount, res corev1.ResourceRequirements) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext:              restrictedPodSecurity(),
		Volumes:                      volumes,
		Containers: []corev1.Container{{
			Name:                     moverContainer,
			Image:                    image,
			Args:                     args,
			Env:                      env,
			VolumeMounts:             mounts,
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			SecurityContext:          restrictedContainerSecurity(),
			Resources:                res,
		}},
	}
}

// storageMount gives the flags, environment, volumes and mounts through
// which the data mover reaches a storage. Credentials travel only as
// Secret references in the environment, never as arguments.
func storageMount(s echov1alpha1.BackupStorage) ([]string, []corev1.EnvVar, []corev1.Volume, []corev1.VolumeMount) {
	if pvc := s.PersistentVolumeClaim; pvc != nil {
		return []string{"--fs-root=" + path.Join(storeMountPath, pvc.SubPath)}, nil,
			[]corev1.Volume{{Name: "store", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.ClaimName}}}},
			[]corev1.VolumeMount{{Name: "store", MountPath: storeMountPath}}
	}
	s3 := s.S3
	args := []string{
		"--s3-endpoint=" + s3.Endpoint,
		"--s3-region=" + cmp.Or(s3.Region, "us-east-1"),
		"--s3-bucket=" + s3.Bucket,
	}
	if s3.Prefix != "" {
		args = append(args, "--s3-prefix="+s3.Prefix)
	}
	if s3.ForcePathStyle {
		args = append(args, "--s3-path-style")
	}
	ref := s3.CredentialsSecretRef
	env := []corev1.EnvVar{
		secretEnv("AWS_ACCESS_KEY_ID", ref.Name, cmp.Or(ref.AccessKeyIDKey, "AWS_ACCESS_KEY_ID")),
		secretEnv("AWS_SECRET_ACCESS_KEY", ref.Name, cmp.Or(ref.SecretAccessKeyKey, "AWS_SECRET_ACCESS_KEY")),
	}
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if ca := s3.CABundle; ca != nil {
		args = append(args, "--s3-ca-file="+path.Join(caMountPath, caFileName))
		volumes = append(volumes, corev1.Volume{Name: "ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: ca.Name, Items: []corev1.KeyToPath{{Key: ca.Key, Path: caFileName}}}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "ca", MountPath: caMountPath, ReadOnly: true})
	}
	return args, env, volumes, mounts
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

// persistent reports whether an Echo keeps data in a claim.
func persistent(echo *echov1alpha1.Echo) bool {
	return echo.Spec.Persistence != nil && echo.Spec.Persistence.Enabled
}

// dataVolume is the Echo's data claim, or an empty directory for an Echo
// without persistence (whose backup holds its configuration only).
func dataVolume(echo *echov1alpha1.Echo) corev1.Volume {
	if !persistent(echo) {
		return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	}
	return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
		ClaimName: dataClaimName(echo), ReadOnly: true}}}
}

// dataAffinity places the Job beside the Echo's pods when they hold its
// ReadWriteOnce claim, which only their node can mount.
func dataAffinity(echo *echov1alpha1.Echo) *corev1.Affinity {
	if !persistent(echo) || slices.Contains(echo.Spec.Persistence.AccessModes, corev1.ReadWriteMany) || echo.Status.ReadyReplicas == 0 {
		return nil
	}
	return &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				"app.kubernetes.io/name": "echo", "app.kubernetes.io/instance": echo.Name}},
			TopologyKey: corev1.LabelHostname,
		}},
	}}
}

// restrictedPodSecurity meets the restricted Pod Security Standard; the
// group lets the mover read files the echo server wrote.
func restrictedPodSecurity() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To(moverUserID),
		RunAsGroup:     ptr.To(moverUserID),
		FSGroup:        ptr.To(moverUserID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func restrictedContainerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}
