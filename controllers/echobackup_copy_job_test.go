package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// TestCopyJob: a copy's Job reads the backup's storage under the usual
// flags and environment, and writes the copy's under their "to" twins,
// each side with its own Secrets, files and identity.
func TestCopyJob(t *testing.T) {
	b := &echov1alpha1.EchoBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly-1", UID: "uid-1"},
		Spec:       echov1alpha1.EchoBackupSpec{EchoName: "journal"},
		Status:     echov1alpha1.EchoBackupStatus{Checksum: "sha256:abcd"},
	}
	from := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Bucket: "primary", Endpoint: "https://a.example.test",
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "primary-creds"},
		CABundle:             &echov1alpha1.SecretKeyRef{Name: "primary-ca", Key: "ca.crt"}}}
	sseKey := &echov1alpha1.SecretKeyRef{Name: "offsite-key", Key: "key"}
	identity := &echov1alpha1.S3Identity{ServiceAccountName: "offsite-writer", Audience: "sts.example.test"}
	cases := []struct {
		name     string
		to       echov1alpha1.BackupStorage
		wantArgs []string
		wantEnv  map[string]string // name: Secret (or the value of a plain variable)
		wantSA   string
	}{
		{
			name: "credentials and SSE-C at the destination",
			to: echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Bucket: "offsite", Endpoint: "https://b.example.test", Prefix: "dr",
				CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "offsite-creds"},
				Encryption:           &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC, CustomerKey: sseKey}}},
			wantArgs: []string{"copy", "--key=ns/journal/nightly-1", "--checksum=sha256:abcd",
				"--s3-bucket=primary", "--s3-ca-file=/etc/echo-backup/ca/ca.crt",
				"--to-s3-endpoint=https://b.example.test", "--to-s3-bucket=offsite", "--to-s3-prefix=dr", "--to-s3-sse=SSE-C",
				"--to-s3-sse-customer-key-file=/etc/echo-backup/sse-to/key"},
			wantEnv: map[string]string{"AWS_ACCESS_KEY_ID": "primary-creds", "AWS_SECRET_ACCESS_KEY": "primary-creds",
				"COPY_TO_AWS_ACCESS_KEY_ID": "offsite-creds", "COPY_TO_AWS_SECRET_ACCESS_KEY": "offsite-creds"},
		},
		{
			name: "an identity at the destination",
			to: echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Bucket: "offsite", Endpoint: "https://b.example.test",
				Identity: identity}},
			wantArgs: []string{"--to-s3-bucket=offsite"},
			wantEnv: map[string]string{"AWS_ACCESS_KEY_ID": "primary-creds",
				"COPY_TO_AWS_WEB_IDENTITY_TOKEN_FILE": "/var/run/secrets/echo.dev/identity-to/token"},
			wantSA: "offsite-writer",
		},
		{
			name:     "a claim at the destination",
			to:       echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "dr", SubPath: "echo"}},
			wantArgs: []string{"--s3-bucket=primary", "--to-fs-root=/backup-to/echo"},
			wantEnv:  map[string]string{"AWS_ACCESS_KEY_ID": "primary-creds"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := copyJob(b, "offsite", from, tc.to, moverSettings{image: "operator:1"})
			if job.Name != "nightly-1-copy-offsite" || job.Labels[echov1alpha1.BackupLabel] != "nightly-1" {
				t.Errorf("Job %s labels %v", job.Name, job.Labels)
			}
			checkMoverFailurePolicy(t, job)
			checkCopyPod(t, job.Spec.Template.Spec, tc.wantArgs, tc.wantEnv, tc.wantSA)
		})
	}
	if got := copyJobName(&echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("b", 63)}}, strings.Repeat("c", 40)); len(got) > 63 {
		t.Errorf("copy Job name %s is %d characters", got, len(got))
	}
	if a, b := copyJobName(b, "one"), copyJobName(b, "two"); a == b {
		t.Errorf("two copies share the Job name %s", a)
	}
}

// checkCopyPod checks a copy Job's pod: its arguments, its environment
// (each variable from the Secret, or of the value, wantEnv names), its
// ServiceAccount, no two mounts or volumes alike, and no credentials in
// its arguments.
func checkCopyPod(t *testing.T, pod corev1.PodSpec, wantArgs []string, wantEnv map[string]string, wantSA string) {
	t.Helper()
	c := pod.Containers[0]
	for _, a := range wantArgs {
		if !contains(c.Args, a) {
			t.Errorf("args %v lack %s", c.Args, a)
		}
	}
	for name, want := range wantEnv {
		checkEnv(t, c.Env, name, want)
	}
	if pod.ServiceAccountName != wantSA {
		t.Errorf("runs as %q, want %q", pod.ServiceAccountName, wantSA)
	}
	seen := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if seen[m.MountPath] {
			t.Errorf("two mounts at %s", m.MountPath)
		}
		seen[m.MountPath] = true
	}
	for _, v := range pod.Volumes {
		if seen[v.Name] {
			t.Errorf("two volumes named %s", v.Name)
		}
		seen[v.Name] = true
	}
	for _, a := range c.Args {
		if strings.Contains(a, "secret") || strings.Contains(a, "creds") {
			t.Errorf("an argument names credentials: %s", a)
		}
	}
}

// checkEnv checks that the variable name comes from the Secret want, or
// has the value want.
func checkEnv(t *testing.T, env []corev1.EnvVar, name, want string) {
	t.Helper()
	e := findEnv(env, name)
	switch {
	case e == nil:
		t.Errorf("no %s in %v", name, env)
	case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef.Name != want:
		t.Errorf("%s from Secret %s, want %s", name, e.ValueFrom.SecretKeyRef.Name, want)
	case e.ValueFrom == nil && e.Value != want:
		t.Errorf("%s=%s, want %s", name, e.Value, want)
	}
}

func TestIdentityConflict(t *testing.T) {
	keys := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "c"}}}
	as := func(sa string) echov1alpha1.BackupStorage {
		return echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Identity: &echov1alpha1.S3Identity{ServiceAccountName: sa}}}
	}
	claim := echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "c"}}
	for _, tc := range []struct {
		from, to echov1alpha1.BackupStorage
		conflict bool
	}{
		{keys, keys, false}, {as("a"), keys, false}, {keys, as("b"), false}, {as("a"), as("a"), false},
		{claim, as("a"), false}, {as("a"), as("b"), true},
	} {
		msg := identityConflict(tc.from, tc.to)
		if (msg != "") != tc.conflict {
			t.Errorf("identityConflict(%v, %v) = %q, want a conflict: %v", tc.from.S3.ServiceAccountName(), tc.to.S3.ServiceAccountName(), msg, tc.conflict)
		}
		if tc.conflict && !strings.Contains(msg, "credentialsSecretRef") {
			t.Errorf("the conflict does not say what to fix: %s", msg)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func findEnv(env []corev1.EnvVar, name string) *corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			return &env[i]
		}
	}
	return nil
}
