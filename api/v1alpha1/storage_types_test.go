package v1alpha1

import (
	"slices"
	"testing"
)

func TestStorageSecretNames(t *testing.T) {
	s3 := func(ca *SecretKeyRef) *S3Storage {
		return &S3Storage{CredentialsSecretRef: &S3CredentialsSecretRef{Name: "creds"}, CABundle: ca}
	}
	cases := []struct {
		name    string
		storage BackupStorage
		want    []string
	}{
		{"a claim", BackupStorage{PersistentVolumeClaim: &PVCStorage{ClaimName: "backups"}}, nil},
		{"credentials", BackupStorage{S3: s3(nil)}, []string{"creds"}},
		{"credentials and a CA bundle", BackupStorage{S3: s3(&SecretKeyRef{Name: "ca", Key: "ca.crt"})}, []string{"creds", "ca"}},
		{"both in one Secret", BackupStorage{S3: s3(&SecretKeyRef{Name: "creds", Key: "ca.crt"})}, []string{"creds"}},
		{"an SSE-C key", BackupStorage{S3: sseC(s3(nil), "sse")}, []string{"creds", "sse"}},
		{"an SSE-C key beside the credentials", BackupStorage{S3: sseC(s3(nil), "creds")}, []string{"creds"}},
		{"an SSE-C key beside the CA bundle", BackupStorage{S3: sseC(s3(&SecretKeyRef{Name: "ca", Key: "ca.crt"}), "ca")}, []string{"creds", "ca"}},
		{"a leftover key of another type", BackupStorage{S3: withEncryption(s3(nil), S3Encryption{Type: EncryptionSSES3, CustomerKey: &SecretKeyRef{Name: "sse", Key: "key"}})},
			[]string{"creds"}},
	}
	for _, tc := range cases {
		if got := tc.storage.SecretNames(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: SecretNames() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func withEncryption(s *S3Storage, e S3Encryption) *S3Storage {
	s.Encryption = &e
	return s
}

func sseC(s *S3Storage, secret string) *S3Storage {
	return withEncryption(s, S3Encryption{Type: EncryptionSSEC, CustomerKey: &SecretKeyRef{Name: secret, Key: "key"}})
}

func TestStorageSecretOptedIn(t *testing.T) {
	cases := []struct {
		labels map[string]string
		want   bool
	}{
		{nil, false},
		{map[string]string{"app": "db"}, false},
		{map[string]string{StorageSecretLabel: "false"}, false},
		{map[string]string{StorageSecretLabel: "True"}, false},
		{map[string]string{StorageSecretLabel: ""}, false},
		{map[string]string{StorageSecretLabel: "true"}, true},
	}
	for _, tc := range cases {
		if got := StorageSecretOptedIn(tc.labels); got != tc.want {
			t.Errorf("StorageSecretOptedIn(%v) = %v, want %v", tc.labels, got, tc.want)
		}
	}
}
