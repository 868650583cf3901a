package moverprotocol

import (
	"cmp"

	"k8s.io/utils/ptr"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// S3 is the API's S3 storage resolved into what the data mover reaches it
// with, every default applied: the one translation the controllers' mover
// Jobs (flags, environment, CA volume) and the live API's S3 clients share.
// The Secret CredentialsSecret, unless empty, holds the credentials under
// AccessKeyIDKey and SecretAccessKeyKey, and a session token under
// SessionTokenKey unless empty; otherwise the mover runs as the
// ServiceAccount, exchanging a token of Audience at STSEndpoint (the
// storage's endpoint when empty) for credentials of RoleARN. CASecret,
// unless empty, holds the CA bundle under CAKey.
// Encryption, unless empty, is the server-side encryption of what the
// mover writes: KMSKeyID is SSE-KMS's key; CustomerKeySecret and
// CustomerKeyKey are the Secret and key of SSE-C's.
type S3 struct {
	Endpoint, Region, Bucket, Prefix string
	PathStyle                        bool

	CredentialsSecret, AccessKeyIDKey, SecretAccessKeyKey, SessionTokenKey, CASecret, CAKey string

	ServiceAccount, Audience, RoleARN, STSEndpoint string

	Encryption                                  echov1alpha1.S3EncryptionType
	KMSKeyID, CustomerKeySecret, CustomerKeyKey string
}

// The values of FlagS3SSE: the API's server-side encryption types.
const (
	SSES3  = string(echov1alpha1.EncryptionSSES3)
	SSEKMS = string(echov1alpha1.EncryptionSSEKMS)
	SSEC   = string(echov1alpha1.EncryptionSSEC)
)

// ResolveS3 resolves s with the CRD's defaults, for an object the API
// server did not default: DefaultS3Region, the credentials under the names
// of the mover's environment (EnvAccessKeyID, EnvSecretAccessKey) and an
// identity's audience DefaultIdentityAudience.
func ResolveS3(s *echov1alpha1.S3Storage) S3 {
	ca := ptr.Deref(s.CABundle, echov1alpha1.SecretKeyRef{})
	resolved := S3{Endpoint: s.Endpoint, Region: cmp.Or(s.Region, DefaultS3Region), Bucket: s.Bucket, Prefix: s.Prefix, PathStyle: s.ForcePathStyle,
		CASecret: ca.Name, CAKey: ca.Key}
	if ref := s.CredentialsSecretRef; ref != nil {
		resolved.CredentialsSecret, resolved.SessionTokenKey = ref.Name, ref.SessionTokenKey
		resolved.AccessKeyIDKey = cmp.Or(ref.AccessKeyIDKey, EnvAccessKeyID)
		resolved.SecretAccessKeyKey = cmp.Or(ref.SecretAccessKeyKey, EnvSecretAccessKey)
	}
	if id := s.Identity; id != nil {
		resolved.ServiceAccount, resolved.RoleARN, resolved.STSEndpoint = id.ServiceAccountName, id.RoleARN, id.STSEndpoint
		resolved.Audience = cmp.Or(id.Audience, echov1alpha1.DefaultIdentityAudience)
	}
	if e := s.Encryption; e != nil {
		resolved.Encryption = e.Type
		switch e.Type {
		case echov1alpha1.EncryptionSSEKMS:
			resolved.KMSKeyID = e.KMSKeyID
		case echov1alpha1.EncryptionSSEC:
			key := ptr.Deref(e.CustomerKey, echov1alpha1.SecretKeyRef{})
			resolved.CustomerKeySecret, resolved.CustomerKeyKey = key.Name, key.Key
		}
	}
	return resolved
}

// Args are the mover's flags for s, never the credentials nor an SSE-C
// key; caFile and customerKeyFile are where the CA bundle and the SSE-C
// key are mounted, when s has them.
func (s S3) Args(caFile, customerKeyFile string) []string {
	return s.args("", caFile, customerKeyFile)
}

// ToArgs are Args as the destination of a copy (ToFlag).
func (s S3) ToArgs(caFile, customerKeyFile string) []string {
	return s.args(ToPrefix, caFile, customerKeyFile)
}

// args are the flags for s, each name prefixed with prefix.
func (s S3) args(prefix, caFile, customerKeyFile string) []string {
	arg := func(flag, value string) string { return Arg(prefix+flag, value) }
	args := []string{arg(FlagS3Endpoint, s.Endpoint), arg(FlagS3Region, s.Region), arg(FlagS3Bucket, s.Bucket)}
	if s.Prefix != "" {
		args = append(args, arg(FlagS3Prefix, s.Prefix))
	}
	if s.PathStyle {
		args = append(args, Switch(prefix+FlagS3PathStyle))
	}
	if s.CASecret != "" {
		args = append(args, arg(FlagS3CAFile, caFile))
	}
	if s.ServiceAccount != "" && s.STSEndpoint != "" {
		args = append(args, arg(FlagS3STSEndpoint, s.STSEndpoint))
	}
	if s.Encryption != "" {
		args = append(args, arg(FlagS3SSE, string(s.Encryption)))
	}
	if s.KMSKeyID != "" {
		args = append(args, arg(FlagS3SSEKMSKeyID, s.KMSKeyID))
	}
	if s.CustomerKeySecret != "" {
		args = append(args, arg(FlagS3SSECustomerKeyFile, customerKeyFile))
	}
	return args
}
