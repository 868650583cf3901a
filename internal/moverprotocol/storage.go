package moverprotocol

import (
	"cmp"

	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// S3 is the API's S3 storage resolved into what the data mover reaches it
// with, every default applied: the one translation the controllers' mover
// Jobs (flags, environment, CA volume) and the live API's S3 clients share.
// The Secret CredentialsSecret holds the credentials under AccessKeyIDKey and
// SecretAccessKeyKey; CASecret, unless empty, the CA bundle under CAKey.
type S3 struct {
	Endpoint, Region, Bucket, Prefix string
	PathStyle                        bool

	CredentialsSecret, AccessKeyIDKey, SecretAccessKeyKey, CASecret, CAKey string
}

// ResolveS3 resolves s with the CRD's defaults, for an object the API
// server did not default: DefaultS3Region, and the credentials under the
// names of the mover's environment (EnvAccessKeyID, EnvSecretAccessKey).
func ResolveS3(s *echov1alpha1.S3Storage) S3 {
	ref, ca := s.CredentialsSecretRef, ptr.Deref(s.CABundle, echov1alpha1.SecretKeyRef{})
	return S3{Endpoint: s.Endpoint, Region: cmp.Or(s.Region, DefaultS3Region), Bucket: s.Bucket, Prefix: s.Prefix, PathStyle: s.ForcePathStyle,
		CredentialsSecret: ref.Name, AccessKeyIDKey: cmp.Or(ref.AccessKeyIDKey, EnvAccessKeyID),
		SecretAccessKeyKey: cmp.Or(ref.SecretAccessKeyKey, EnvSecretAccessKey), CASecret: ca.Name, CAKey: ca.Key}
}

// Args are the mover's flags for s, never the credentials; caFile is where
// the CA bundle is mounted, when s has one.
func (s S3) Args(caFile string) []string {
	args := []string{Arg(FlagS3Endpoint, s.Endpoint), Arg(FlagS3Region, s.Region), Arg(FlagS3Bucket, s.Bucket)}
	if s.Prefix != "" {
		args = append(args, Arg(FlagS3Prefix, s.Prefix))
	}
	if s.PathStyle {
		args = append(args, Switch(FlagS3PathStyle))
	}
	if s.CASecret != "" {
		args = append(args, Arg(FlagS3CAFile, caFile))
	}
	return args
}
