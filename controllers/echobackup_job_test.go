package controllers

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/names"
)

func TestBackupJob(t *testing.T) {
	s3 := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
		Bucket: "b", Endpoint: "https://s3.example.test", Prefix: "team", Region: "eu-west-3",
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds", AccessKeyIDKey: "id", SecretAccessKeyKey: "secret"},
		CABundle:             &echov1alpha1.SecretKeyRef{Name: "ca", Key: "bundle.pem"},
	}}
	pvc := echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "backups", SubPath: "echo"}}
	backup := func(storage echov1alpha1.BackupStorage, compression echov1alpha1.Compression) *echov1alpha1.EchoBackup {
		return &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1", UID: "b-uid"},
			Spec: echov1alpha1.EchoBackupSpec{EchoName: "web", Storage: storage, Compression: compression}}
	}
	echo := func(persistence *echov1alpha1.PersistenceSpec, ready int32) *echov1alpha1.Echo {
		return &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u-1"},
			Spec:   echov1alpha1.EchoSpec{Persistence: persistence},
			Status: echov1alpha1.EchoStatus{ReadyReplicas: ready}}
	}
	rwo := &echov1alpha1.PersistenceSpec{Enabled: true, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}
	rwx := &echov1alpha1.PersistenceSpec{Enabled: true, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}}

	cases := []struct {
		name         string
		backup       *echov1alpha1.EchoBackup
		echo         *echov1alpha1.Echo
		wantArgs     []string
		wantEnv      int
		wantClaim    string // claim mounted at /data; empty: an emptyDir
		wantAffinity bool
	}{
		{"S3 with a CA, live RWO data", backup(s3, ""), echo(rwo, 1),
			[]string{"--s3-endpoint=https://s3.example.test", "--s3-region=eu-west-3", "--s3-prefix=team", "--s3-ca-file=/etc/echo-backup/ca/ca.crt", "--compression=gzip"},
			2, "web-data", true},
		{"PVC store, uncompressed, RWX data", backup(pvc, echov1alpha1.CompressionNone), echo(rwx, 2),
			[]string{"--fs-root=/backup/echo", "--compression=none"}, 0, "web-data", false},
		{"RWO data of a stopped Echo", backup(pvc, ""), echo(rwo, 0), []string{"--fs-root=/backup/echo"}, 0, "web-data", false},
		{"no persistence", backup(s3, ""), echo(nil, 1), []string{"--data-dir=/data", "--source-uid=u-1"}, 2, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := backupJob(tc.backup, tc.echo, tc.backup.Spec.Storage, moverSettings{image: "img"})
			pod := job.Spec.Template.Spec
			c := pod.Containers[0]
			for _, want := range append(tc.wantArgs, "backup", "--key=ns/web/b1", "--backup-id=b-uid") {
				if !slices.Contains(c.Args, want) {
					t.Errorf("args %v lack %q", c.Args, want)
				}
			}
			checkSecretEnv(t, c.Env, tc.wantEnv)
			checkDataVolume(t, pod.Volumes, tc.wantClaim)
			if got := pod.Affinity != nil; got != tc.wantAffinity {
				t.Errorf("affinity = %v, want %v", pod.Affinity, tc.wantAffinity)
			}
			if pod.SecurityContext.RunAsNonRoot == nil || !*pod.SecurityContext.RunAsNonRoot || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Error("the Job's pod does not meet the restricted profile")
			}
			checkMoverFailurePolicy(t, job)
			if job.Labels[echov1alpha1.BackupLabel] != "b1" || job.Spec.Template.Labels[echov1alpha1.BackupLabel] != "b1" {
				t.Error("the Job and its pods are not labelled with their backup")
			}
		})
	}
}

// checkSecretEnv checks that the environment holds n variables, each a
// Secret reference.
func checkSecretEnv(t *testing.T, env []corev1.EnvVar, n int) {
	t.Helper()
	if len(env) != n {
		t.Errorf("env = %v, want %d Secret references", env, n)
	}
	for _, e := range env {
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			t.Errorf("env %s is not a Secret reference", e.Name)
		}
	}
}

// checkDataVolume checks that the data volume is the claim, read-only, or
// an emptyDir when claim is empty.
func checkDataVolume(t *testing.T, volumes []corev1.Volume, claim string) {
	t.Helper()
	i := slices.IndexFunc(volumes, func(v corev1.Volume) bool { return v.Name == "data" })
	if i < 0 {
		t.Fatal("no data volume")
	}
	src := volumes[i].VolumeSource
	switch {
	case claim == "" && src.EmptyDir == nil:
		t.Errorf("data volume = %+v, want an emptyDir", src)
	case claim != "" && (src.PersistentVolumeClaim == nil || src.PersistentVolumeClaim.ClaimName != claim || !src.PersistentVolumeClaim.ReadOnly):
		t.Errorf("data volume = %+v, want claim %s read-only", src, claim)
	}
}

func TestDeleteJob(t *testing.T) {
	s3 := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
		Bucket: "b", Endpoint: "https://s3.example.test", Prefix: "team", Region: "eu-west-3",
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"},
		CABundle:             &echov1alpha1.SecretKeyRef{Name: "ca", Key: "bundle.pem"},
	}}
	minio := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
		Bucket: "b", Endpoint: "http://minio:9000", ForcePathStyle: true,
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"},
	}}
	pvc := echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "backups", SubPath: "echo"}}
	sseC := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
		Bucket: "b", Endpoint: "https://s3.example.test",
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"},
		Encryption: &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
			CustomerKey: &echov1alpha1.SecretKeyRef{Name: "backup-key", Key: "aes256"}},
	}}

	cases := []struct {
		name       string
		backupName string
		storage    echov1alpha1.BackupStorage
		wantName   string
		wantArgs   []string
		wantEnv    int
		wantVolume func(corev1.Volume) bool // a volume the Job must mount
	}{
		{"S3 with a CA", "b1", s3, "b1-delete",
			[]string{"--s3-endpoint=https://s3.example.test", "--s3-region=eu-west-3", "--s3-bucket=b", "--s3-prefix=team", "--s3-ca-file=/etc/echo-backup/ca/ca.crt"},
			2, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "ca" }},
		{"S3 with an SSE-C key, a file of its Secret", "b1", sseC, "b1-delete",
			[]string{"--s3-endpoint=https://s3.example.test", "--s3-sse=SSE-C", "--s3-sse-customer-key-file=/etc/echo-backup/sse/key"},
			2, func(v corev1.Volume) bool {
				return v.Secret != nil && v.Secret.SecretName == "backup-key" &&
					slices.Equal(v.Secret.Items, []corev1.KeyToPath{{Key: "aes256", Path: "key"}})
			}},
		{"S3 path style, default region", "b1", minio, "b1-delete",
			[]string{"--s3-endpoint=http://minio:9000", "--s3-region=us-east-1", "--s3-path-style"}, 2, nil},
		{"PVC store", "b1", pvc, "b1-delete", []string{"--fs-root=/backup/echo"}, 0,
			func(v corev1.Volume) bool {
				return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "backups"
			}},
		{"a long name", strings.Repeat("n", 63), pvc, "", []string{"--fs-root=/backup/echo"}, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: tc.backupName, UID: "uid-1"},
				Spec: echov1alpha1.EchoBackupSpec{EchoName: "web", Storage: tc.storage, DeletionPolicy: echov1alpha1.DeletionPolicyDelete}}
			job := deleteJob(b, b.Spec.Storage, moverSettings{image: "img"})
			checkMoverFailurePolicy(t, job)
			if tc.wantName != "" && job.Name != tc.wantName {
				t.Errorf("name = %s, want %s", job.Name, tc.wantName)
			}
			if len(job.Name) > names.MaxLen || job.Name != deleteJobName(b) || job.Name == backupJobName(b) {
				t.Errorf("name %q: not the backup's delete Job name", job.Name)
			}
			checkDeleteArgs(t, job.Spec.Template.Spec.Containers[0], append(tc.wantArgs, "--key=ns/web/"+tc.backupName))
			checkSecretEnv(t, job.Spec.Template.Spec.Containers[0].Env, tc.wantEnv)
			checkDeleteVolumes(t, job.Spec.Template.Spec, tc.wantVolume)
			checkDeleteJobBounds(t, job)
			if len(job.OwnerReferences) != 0 {
				t.Error("the delete Job is owned: it would go with the EchoBackup it serves")
			}
			if job.Annotations[echov1alpha1.BackupUIDAnnotation] != "uid-1" || job.Labels[echov1alpha1.BackupLabel] != tc.backupName ||
				job.Spec.Template.Labels[chart.ManagedByLabel] != echov1alpha1.ManagedBy {
				t.Errorf("labels %v, annotations %v: the Job is not tied to its backup", job.Labels, job.Annotations)
			}
			if got := deleteJobBackup(context.Background(), job); len(got) != 1 || got[0].Name != tc.backupName || got[0].Namespace != "ns" {
				t.Errorf("the Job maps to %v, want its backup", got)
			}
		})
	}
	if got := deleteJobBackup(context.Background(), backupJob(
		&echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1"}, Spec: echov1alpha1.EchoBackupSpec{Storage: pvc}},
		&echov1alpha1.Echo{}, pvc, moverSettings{image: "img"})); len(got) != 0 {
		t.Errorf("a backup Job maps to %v through the delete Jobs' watch", got)
	}
}

// checkDeleteArgs checks that the container runs the image's delete
// subcommand with the wanted flags and none of a backup's.
func checkDeleteArgs(t *testing.T, c corev1.Container, want []string) {
	t.Helper()
	if c.Image != "img" || len(c.Args) == 0 || c.Args[0] != "delete" {
		t.Errorf("container runs %s %v, want the image's delete subcommand", c.Image, c.Args)
	}
	for _, w := range want {
		if !slices.Contains(c.Args, w) {
			t.Errorf("args %v lack %q", c.Args, w)
		}
	}
	for _, arg := range c.Args {
		if strings.HasPrefix(arg, "--data-dir") || strings.HasPrefix(arg, "--compression") || strings.HasPrefix(arg, "--config-file") {
			t.Errorf("args hold %s, which only a backup takes", arg)
		}
	}
}

// checkDeleteVolumes checks that the pod mounts the storage (a volume
// matching want, when given) and nothing of the Echo or the backup.
func checkDeleteVolumes(t *testing.T, pod corev1.PodSpec, want func(corev1.Volume) bool) {
	t.Helper()
	for _, v := range pod.Volumes {
		if v.Name == "data" || v.Name == "config" {
			t.Errorf("the Job mounts the backup's %s volume", v.Name)
		}
	}
	if want != nil && !slices.ContainsFunc(pod.Volumes, want) {
		t.Errorf("volumes %+v lack the storage's", pod.Volumes)
	}
	for _, m := range pod.Containers[0].VolumeMounts {
		if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
			t.Errorf("mount %s has no volume", m.Name)
		}
	}
	if pod.Affinity != nil || pod.NodeSelector != nil {
		t.Error("the delete Job is placed by the Echo's scheduling, which it does not need")
	}
}

// checkDeleteJobBounds checks the Job's security and limits.
func checkDeleteJobBounds(t *testing.T, job *batchv1.Job) {
	t.Helper()
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if !*pod.SecurityContext.RunAsNonRoot || !*c.SecurityContext.ReadOnlyRootFilesystem || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("the Job's pod does not meet the restricted profile")
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever || *job.Spec.BackoffLimit <= 0 || *job.Spec.ActiveDeadlineSeconds <= 0 ||
		job.Spec.TTLSecondsAfterFinished == nil || c.Resources.Limits.Memory().IsZero() {
		t.Error("the Job is not bounded: restart policy, retries, deadline, TTL and memory")
	}
}

func TestRetryWait(t *testing.T) {
	failed := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		since, want time.Duration
	}{
		{0, artifactDeleteBackoff},
		{20 * time.Second, artifactDeleteBackoff - 20*time.Second},
		{artifactDeleteBackoff, 0},
		{time.Hour, 0},
	} {
		if got := retryWait(failed, failed.Add(tc.since)); got != tc.want {
			t.Errorf("%s after the failure: retry in %s, want %s", tc.since, got, tc.want)
		}
	}
}
