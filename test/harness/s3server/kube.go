package s3server

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// CredentialsSecretName names the Secret CredentialsSecret returns and
// Storage refers to.
const CredentialsSecretName = "s3-credentials"

// CredentialsSecret holds the server's credentials in namespace, under the
// keys the data mover Jobs read by default, opted in as storage
// credentials.
func (s *Server) CredentialsSecret(namespace string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: CredentialsSecretName,
			Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		StringData: map[string]string{"AWS_ACCESS_KEY_ID": s.AccessKey, "AWS_SECRET_ACCESS_KEY": s.SecretKey},
	}
}

// Storage is the backup storage of bucket on this server under prefix,
// with the credentials of CredentialsSecret and, on HTTPS, the CA bundle of
// CASecret.
func (s *Server) Storage(bucket, prefix string) echov1alpha1.BackupStorage {
	storage := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
		Endpoint: s.Endpoint, Bucket: bucket, Prefix: prefix, ForcePathStyle: true,
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: CredentialsSecretName},
	}}
	if s.CAFile != "" {
		storage.S3.CABundle = &echov1alpha1.SecretKeyRef{Name: CASecretName, Key: caKey}
	}
	return storage
}

// CASecretName names the Secret CASecret returns.
const CASecretName = "s3-ca"

// caKey is the key of the CA bundle in CASecret.
const caKey = "ca.crt"

// CASecret holds the CA bundle of a server on HTTPS in namespace, opted in
// as storage credentials.
func (s *Server) CASecret(tb testing.TB, namespace string) *corev1.Secret {
	tb.Helper()
	ca, err := os.ReadFile(s.CAFile)
	if err != nil {
		tb.Fatalf("reading the S3 server's CA: %v", err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: CASecretName,
			Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}},
		Data: map[string][]byte{caKey: ca},
	}
}
