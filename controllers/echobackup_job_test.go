package controllers

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestChildName(t *testing.T) {
	long := strings.Repeat("a", 60)
	cases := []struct {
		parent, suffix string
		check          func(string) bool
	}{
		{"web-1", "backup", func(n string) bool { return n == "web-1-backup" }},
		{long, "backup", func(n string) bool { return len(n) <= 63 && strings.HasSuffix(n, "-backup") }},
		{long, "config", func(n string) bool { return len(n) <= 63 && n != childName(long, "backup") }},
	}
	for _, tc := range cases {
		got := childName(tc.parent, tc.suffix)
		if !tc.check(got) {
			t.Errorf("childName(%q, %q) = %q", tc.parent, tc.suffix, got)
		}
		if again := childName(tc.parent, tc.suffix); again != got {
			t.Errorf("childName is not deterministic: %q then %q", got, again)
		}
	}
	if childName(long+"x", "backup") == childName(long+"y", "backup") {
		t.Error("different parents shortened to the same name")
	}
}

func TestBackupJob(t *testing.T) {
	s3 := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
		Bucket: "b", Endpoint: "https://s3.example.test", Prefix: "team", Region: "eu-west-3",
		CredentialsSecretRef: echov1alpha1.S3CredentialsSecretRef{Name: "creds", AccessKeyIDKey: "id", SecretAccessKeyKey: "secret"},
		CABundle:             &echov1alpha1.SecretKeyRef{Name: "ca", Key: "bundle.pem"},
	}}
	pvc := echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "backups", SubPath: "echo"}}
	backup := func(storage echov1alpha1.BackupStorage, compression echov1alpha1.Compression) *echov1alpha1.EchoBackup {
		return &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1"},
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
			job := backupJob(tc.backup, tc.echo, "img")
			pod := job.Spec.Template.Spec
			c := pod.Containers[0]
			for _, want := range append(tc.wantArgs, "backup", "--key=ns/web/b1") {
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
			if job.Labels[BackupLabel] != "b1" || job.Spec.Template.Labels[BackupLabel] != "b1" {
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
