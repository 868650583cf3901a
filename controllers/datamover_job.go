package controllers

import (
	"path"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// What every data mover Job shares, whichever kind runs it (backups,
// artifact deletion, restores): the pod running the operator's image under
// the restricted Pod Security Standard, the storage it reaches, and the
// failure policy matching the mover's exit codes.

// Paths inside the mover's container, and its user.
const (
	dataMountPath   = "/data"
	configMountPath = "/config"
	storeMountPath  = "/backup"
	caMountPath     = "/etc/echo-backup/ca"
	// customerKeyMountPath holds the SSE-C key, customerKeyFileName.
	customerKeyMountPath = "/etc/echo-backup/sse"
	tmpMountPath         = "/tmp"
	configFileName       = "config.json"
	caFileName           = "ca.crt"
	customerKeyFileName  = "key"
	// identityMountPath holds an identity's projected token,
	// identityTokenFileName, valid identityTokenSeconds; the kubelet
	// renews it.
	identityMountPath     = "/var/run/secrets/echo.dev/identity"
	identityTokenFileName = "token"
	identityTokenSeconds  = int64(3600)
	moverUserID           = int64(65532)
	// moverRetries is the backoff limit of every mover Job: retryable
	// failures (a store briefly unreachable) get two more attempts.
	moverRetries = int32(2)
)

// moverComponent is the app.kubernetes.io/component of every mover Job.
const moverComponent = "data-mover"

// The resources of a mover that moves data (backup, restore) and of one
// that only talks to the store (inspect, delete).
var (
	dataMoverResources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	storeClientResources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
)

// moverLabels label a mover Job and its pods: app name and instance (the
// Echo), the component, the operator as manager, and ownerLabel set to the
// name of the backup or restore the Job serves.
func moverLabels(app, echoName, ownerLabel, ownerName string) map[string]string {
	return map[string]string{
		chart.NameLabel:      app,
		chart.InstanceLabel:  echoName,
		chart.ComponentLabel: moverComponent,
		chart.ManagedByLabel: echov1alpha1.ManagedBy,
		ownerLabel:           ownerName,
	}
}

// moverJob is a data mover Job running pod once (with moverRetries for
// retryable failures), for at most deadline seconds, placed and sized by
// the settings of m (place) over the pod's defaults.
func moverJob(m moverSettings, namespace, name string, labels map[string]string, deadline int64, pod corev1.PodSpec) *batchv1.Job {
	place(&pod, m.placement)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To(moverRetries),
			PodFailurePolicy:      moverFailurePolicy(),
			ActiveDeadlineSeconds: ptr.To(deadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pod,
			},
		},
	}
}

// moverFailurePolicy fails a data mover Job at once on a permanent failure,
// and leaves the others to the Job's retries. A pod the cluster took away
// (a drained node, an eviction, a preemption: the DisruptionTarget
// condition) does not count against them: the data mover's attempt was
// not at fault, and the next one starts afresh.
func moverFailurePolicy() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		},
		{
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(moverprotocol.ContainerName),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
				Values:        []int32{moverprotocol.ExitPermanent},
			},
		},
	}}
}

// moverSettings is what every data mover pod runs with, whichever Job:
// the operator's image, the environment the operator passes on, and the
// placement of the object the Job works for (moverFor).
type moverSettings struct {
	image     string
	env       []corev1.EnvVar
	placement echov1alpha1.MoverSettings
}

// moverPod is the pod of a data mover Job running command with args and
// reaching storage: the operator's image and environment (m), run once under the restricted
// Pod Security Standard, with a scratch /tmp and the storage mounted,
// reporting its result as its termination message. volumes and mounts add
// the command's own.
func moverPod(m moverSettings, command moverprotocol.Command, args []string, storage echov1alpha1.BackupStorage,
	volumes []corev1.Volume, mounts []corev1.VolumeMount, res corev1.ResourceRequirements) corev1.PodSpec {
	store := storageMount(storage)
	volumes = append(append(store.volumes, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}), volumes...)
	mounts = append(append(store.mounts, corev1.VolumeMount{Name: "tmp", MountPath: tmpMountPath}), mounts...)
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		// The API token stays out: an identity's token is projected for
		// its audience alone (storageMount).
		ServiceAccountName:           store.serviceAccount,
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
		SecurityContext:              restrictedPodSecurity(),
		Volumes:                      volumes,
		Containers: []corev1.Container{{
			Name:                     moverprotocol.ContainerName,
			Image:                    m.image,
			Args:                     append(append([]string{string(command)}, args...), store.args...),
			Env:                      append(slices.Clone(m.env), store.env...),
			VolumeMounts:             mounts,
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			SecurityContext:          restrictedContainerSecurity(),
			Resources:                res,
		}},
	}
}

// storeAccess is how the data mover reaches a storage: its flags,
// environment, volumes and mounts, and the ServiceAccount it runs as.
type storeAccess struct {
	args           []string
	env            []corev1.EnvVar
	volumes        []corev1.Volume
	mounts         []corev1.VolumeMount
	serviceAccount string
}

// storeSide is which store of a mover a storage is: the one every command
// works on, or the destination of a copy, whose flags, environment,
// volumes and mount paths are named apart so the two never meet.
type storeSide struct {
	flagPrefix, envPrefix, volumePrefix, pathSuffix string
}

var (
	// sourceSide is the store of every command.
	sourceSide = storeSide{}
	// destinationSide is the store a copy writes to.
	destinationSide = storeSide{flagPrefix: moverprotocol.ToPrefix, envPrefix: moverprotocol.ToEnvPrefix, volumePrefix: "to-", pathSuffix: "-to"}
)

func (s storeSide) flag(f string) string      { return s.flagPrefix + f }
func (s storeSide) env(name string) string    { return s.envPrefix + name }
func (s storeSide) volume(name string) string { return s.volumePrefix + name }
func (s storeSide) path(p string) string      { return p + s.pathSuffix }

// storageMount gives the access of the data mover to a storage.
// Credentials travel only as Secret references in the environment, never
// as arguments; the CA bundle, the SSE-C key and an identity's token as
// files of volumes.
func storageMount(s echov1alpha1.BackupStorage) storeAccess {
	return storageMountAs(s, sourceSide)
}

// storageMountAs is storageMount for the store side of the mover.
func storageMountAs(s echov1alpha1.BackupStorage, side storeSide) storeAccess {
	if pvc := s.PersistentVolumeClaim; pvc != nil {
		return storeAccess{
			args: []string{moverprotocol.Arg(side.flag(moverprotocol.FlagFSRoot), path.Join(side.path(storeMountPath), pvc.SubPath))},
			volumes: []corev1.Volume{{Name: side.volume("store"), VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.ClaimName}}}},
			mounts: []corev1.VolumeMount{{Name: side.volume("store"), MountPath: side.path(storeMountPath)}},
		}
	}
	s3 := moverprotocol.ResolveS3(s.S3)
	var a storeAccess
	if s3.CredentialsSecret != "" {
		a.env = []corev1.EnvVar{
			secretEnv(side.env(moverprotocol.EnvAccessKeyID), s3.CredentialsSecret, s3.AccessKeyIDKey),
			secretEnv(side.env(moverprotocol.EnvSecretAccessKey), s3.CredentialsSecret, s3.SecretAccessKeyKey),
		}
		if s3.SessionTokenKey != "" {
			a.env = append(a.env, secretEnv(side.env(moverprotocol.EnvSessionToken), s3.CredentialsSecret, s3.SessionTokenKey))
		}
	}
	if s3.ServiceAccount != "" {
		a.addIdentity(s3, side)
	}
	caPath, keyPath := side.path(caMountPath), side.path(customerKeyMountPath)
	if s3.CASecret != "" {
		a.volumes = append(a.volumes, secretFileVolume(side.volume("ca"), s3.CASecret, s3.CAKey, caFileName))
		a.mounts = append(a.mounts, corev1.VolumeMount{Name: side.volume("ca"), MountPath: caPath, ReadOnly: true})
	}
	if s3.CustomerKeySecret != "" {
		a.volumes = append(a.volumes, secretFileVolume(side.volume("sse-key"), s3.CustomerKeySecret, s3.CustomerKeyKey, customerKeyFileName))
		a.mounts = append(a.mounts, corev1.VolumeMount{Name: side.volume("sse-key"), MountPath: keyPath, ReadOnly: true})
	}
	if side == destinationSide {
		a.args = s3.ToArgs(path.Join(caPath, caFileName), path.Join(keyPath, customerKeyFileName))
	} else {
		a.args = s3.Args(path.Join(caPath, caFileName), path.Join(keyPath, customerKeyFileName))
	}
	return a
}

// addIdentity runs the mover as the identity's ServiceAccount, with a token
// of its audience projected into a file, which the environment names with
// the role to assume, as on EKS.
func (a *storeAccess) addIdentity(s3 moverprotocol.S3, side storeSide) {
	a.serviceAccount = s3.ServiceAccount
	mountPath := side.path(identityMountPath)
	a.volumes = append(a.volumes, corev1.Volume{Name: side.volume("identity"), VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
			Audience: s3.Audience, ExpirationSeconds: ptr.To(identityTokenSeconds), Path: identityTokenFileName}}},
	}}})
	a.mounts = append(a.mounts, corev1.VolumeMount{Name: side.volume("identity"), MountPath: mountPath, ReadOnly: true})
	a.env = append(a.env, corev1.EnvVar{Name: side.env(moverprotocol.EnvWebIdentityTokenFile), Value: path.Join(mountPath, identityTokenFileName)})
	if s3.RoleARN != "" {
		a.env = append(a.env, corev1.EnvVar{Name: side.env(moverprotocol.EnvRoleARN), Value: s3.RoleARN})
	}
}

// secretFileVolume is the volume holding key of Secret secret as the file
// file.
func secretFileVolume(name, secret, key, file string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: secret, Items: []corev1.KeyToPath{{Key: key, Path: file}}}}}
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
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
