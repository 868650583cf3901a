package moverprotocol

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

func TestResolveS3(t *testing.T) {
	creds := func(name, id, secret string) *echov1alpha1.S3CredentialsSecretRef {
		return &echov1alpha1.S3CredentialsSecretRef{Name: name, AccessKeyIDKey: id, SecretAccessKeyKey: secret}
	}
	cases := []struct {
		name     string
		storage  echov1alpha1.S3Storage
		want     S3
		wantArgs []string
	}{
		{
			name:    "every default",
			storage: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "backups", CredentialsSecretRef: creds("s3", "", "")},
			want: S3{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups",
				CredentialsSecret: "s3", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY"},
			wantArgs: []string{"--s3-endpoint=https://s3.example.test", "--s3-region=us-east-1", "--s3-bucket=backups"},
		},
		{
			name: "every field set",
			storage: echov1alpha1.S3Storage{Endpoint: "http://minio:9000", Region: "eu-west-1", Bucket: "echo", Prefix: "team-a/echo", ForcePathStyle: true,
				CredentialsSecretRef: creds("minio", "user", "password"), CABundle: &echov1alpha1.SecretKeyRef{Name: "tls", Key: "ca.pem"}},
			want: S3{Endpoint: "http://minio:9000", Region: "eu-west-1", Bucket: "echo", Prefix: "team-a/echo", PathStyle: true,
				CredentialsSecret: "minio", AccessKeyIDKey: "user", SecretAccessKeyKey: "password", CASecret: "tls", CAKey: "ca.pem"},
			wantArgs: []string{"--s3-endpoint=http://minio:9000", "--s3-region=eu-west-1", "--s3-bucket=echo", "--s3-prefix=team-a/echo",
				"--s3-path-style", "--s3-ca-file=/ca/ca.crt"},
		},
		{
			name: "SSE-S3",
			storage: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "backups", CredentialsSecretRef: creds("s3", "", ""),
				Encryption: &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSES3}},
			want: S3{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups",
				CredentialsSecret: "s3", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY", Encryption: "SSE-S3"},
			wantArgs: []string{"--s3-endpoint=https://s3.example.test", "--s3-region=us-east-1", "--s3-bucket=backups", "--s3-sse=SSE-S3"},
		},
		{
			name: "SSE-KMS",
			storage: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "backups", CredentialsSecretRef: creds("s3", "", ""),
				Encryption: &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEKMS, KMSKeyID: "echo-key"}},
			want: S3{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups",
				CredentialsSecret: "s3", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY", Encryption: "SSE-KMS", KMSKeyID: "echo-key"},
			wantArgs: []string{"--s3-endpoint=https://s3.example.test", "--s3-region=us-east-1", "--s3-bucket=backups",
				"--s3-sse=SSE-KMS", "--s3-sse-kms-key-id=echo-key"},
		},
		{
			name: "SSE-C: the key is a file, never a flag",
			storage: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "backups", CredentialsSecretRef: creds("s3", "", ""),
				Encryption: &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC, CustomerKey: &echov1alpha1.SecretKeyRef{Name: "backup-key", Key: "key"}}},
			want: S3{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups",
				CredentialsSecret: "s3", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY",
				Encryption: "SSE-C", CustomerKeySecret: "backup-key", CustomerKeyKey: "key"},
			wantArgs: []string{"--s3-endpoint=https://s3.example.test", "--s3-region=us-east-1", "--s3-bucket=backups",
				"--s3-sse=SSE-C", "--s3-sse-customer-key-file=/sse/key"},
		},
		{
			name: "an identity, a session token unused",
			storage: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "backups",
				Identity: &echov1alpha1.S3Identity{ServiceAccountName: "backup", RoleARN: "arn:aws:iam::1:role/b", STSEndpoint: "https://sts.example.test"}},
			want: S3{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups",
				ServiceAccount: "backup", Audience: "sts.amazonaws.com", RoleARN: "arn:aws:iam::1:role/b", STSEndpoint: "https://sts.example.test"},
			wantArgs: []string{"--s3-endpoint=https://s3.example.test", "--s3-region=us-east-1", "--s3-bucket=backups", "--s3-sts-endpoint=https://sts.example.test"},
		},
		{
			name: "temporary credentials",
			storage: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "backups",
				CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3", SessionTokenKey: "token"}},
			want: S3{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups",
				CredentialsSecret: "s3", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY", SessionTokenKey: "token"},
			wantArgs: []string{"--s3-endpoint=https://s3.example.test", "--s3-region=us-east-1", "--s3-bucket=backups"},
		},
		{
			name:    "one credentials key named, the other left to its default",
			storage: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups", CredentialsSecretRef: creds("s3", "", "secret")},
			want: S3{Endpoint: "https://s3.example.test", Region: "us-east-1", Bucket: "backups",
				CredentialsSecret: "s3", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "secret"},
			wantArgs: []string{"--s3-endpoint=https://s3.example.test", "--s3-region=us-east-1", "--s3-bucket=backups"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ResolveS3(&tc.storage)
			if got != tc.want {
				t.Errorf("ResolveS3 = %+v, want %+v", got, tc.want)
			}
			if args := got.Args("/ca/ca.crt", "/sse/key"); !slices.Equal(args, tc.wantArgs) {
				t.Errorf("Args = %q, want %q", args, tc.wantArgs)
			}
		})
	}
}

// TestResolveS3DefaultsAreTheCRDs checks the defaults of ResolveS3 against
// those of every S3 storage of the generated CRDs: an object the API server
// defaulted and one it did not resolve alike.
func TestResolveS3DefaultsAreTheCRDs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(reporoot.Must(t), "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	resolved := ResolveS3(&echov1alpha1.S3Storage{CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{}, Identity: &echov1alpha1.S3Identity{}})
	want := map[string]string{
		"region": resolved.Region, "credentialsSecretRef.accessKeyIDKey": resolved.AccessKeyIDKey,
		"credentialsSecretRef.secretAccessKeyKey": resolved.SecretAccessKeyKey, "identity.audience": resolved.Audience,
	}
	found := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, s3 := range s3Schemas(crd) {
			found++
			for field, w := range want {
				if got := schemaDefault(s3, field); got != w {
					t.Errorf("%s: the CRD defaults %s to %q, ResolveS3 to %q", filepath.Base(f), field, got, w)
				}
			}
		}
	}
	// Echo (its final backup), EchoBackup, EchoBackupSchedule and
	// EchoBackupLocation hold an S3 storage.
	if found < 4 {
		t.Fatalf("found %d S3 storage schemas in %d CRDs, want at least 4", found, len(files))
	}
}

// s3Schemas finds, anywhere in v, the schemas of an S3 storage: those
// whose properties hold credentialsSecretRef.
func s3Schemas(v any) []map[string]any {
	var out []map[string]any
	switch v := v.(type) {
	case map[string]any:
		if props, ok := v["properties"].(map[string]any); ok && props["credentialsSecretRef"] != nil {
			out = append(out, v)
		}
		for _, child := range v {
			out = append(out, s3Schemas(child)...)
		}
	case []any:
		for _, child := range v {
			out = append(out, s3Schemas(child)...)
		}
	}
	return out
}

// schemaDefault is the default of the property at path (dot-separated)
// of schema, or "" when it has none.
func schemaDefault(schema map[string]any, path string) string {
	cur := schema
	for _, name := range strings.Split(path, ".") {
		props, _ := cur["properties"].(map[string]any)
		cur, _ = props[name].(map[string]any)
	}
	d, _ := cur["default"].(string)
	return d
}
