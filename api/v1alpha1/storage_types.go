package v1alpha1

import "slices"

// StorageSecretLabel opts a Secret in as storage credentials for
// echo-operator. A backup, schedule, restore or location may name (as its
// credentials or its CA bundle) only a Secret of its namespace that carries
// this label with the value "true"; the operator refuses any other before
// it hands the Secret to a data mover Job or reads it. Setting the label
// takes the right to edit Secrets, which the Echo roles do not grant.
const StorageSecretLabel = "echo.dev/storage-credentials"

// ReasonSecretNotOptedIn is the condition and Event reason of a backup,
// restore or location that names a Secret without StorageSecretLabel.
const ReasonSecretNotOptedIn = "SecretNotOptedIn"

// EventReasonSecretNotOptedIn (Warning) is recorded on the backup or
// restore whose data mover Job was not created, with what to label.
const EventReasonSecretNotOptedIn = ReasonSecretNotOptedIn

// StorageIdentityLabel opts a ServiceAccount in as the identity of data
// movers: a backup, schedule, restore or location may name (in
// storage.s3.identity) only a ServiceAccount of its namespace that carries
// this label with the value "true", and its token goes only to the
// endpoints of its StorageEndpointsAnnotation. Setting it takes the right to edit
// ServiceAccounts, which the Echo roles do not grant.
const StorageIdentityLabel = "echo.dev/storage-identity"

// StorageIdentityAudiencesAnnotation on an opted-in ServiceAccount lists,
// comma-separated, the audiences a data mover may ask its tokens for.
// Without it, only DefaultIdentityAudience.
const StorageIdentityAudiencesAnnotation = "echo.dev/storage-identity-audiences"

// DefaultIdentityAudience is the audience of a data mover's token unless
// storage.s3.identity.audience says otherwise: AWS STS's.
const DefaultIdentityAudience = "sts.amazonaws.com"

// ReasonIdentityNotOptedIn is the condition and Event reason of a backup
// or restore that names a ServiceAccount without StorageIdentityLabel, or
// an audience its StorageIdentityAudiencesAnnotation does not allow.
const ReasonIdentityNotOptedIn = "IdentityNotOptedIn"

// EventReasonIdentityNotOptedIn (Warning) is recorded on the backup or
// restore whose data mover Job was not created, with what to fix.
const EventReasonIdentityNotOptedIn = ReasonIdentityNotOptedIn

// ReasonSecretNotFound is the condition reason of a backup or restore
// whose storage names a Secret that does not exist (yet): no Job names it
// until it exists and has opted in, and its creation or labelling brings
// the work back.
const ReasonSecretNotFound = "SecretNotFound"

// ReasonMoverUnschedulable is the condition reason (Complete=False, phase
// Pending) of a backup or restore whose data mover pod the scheduler
// cannot place, and of a copy's status: the message gives the
// scheduler's account. The Job runs once a node can take the pod; the
// mover's placement (spec.mover, its location's) is what to check.
const ReasonMoverUnschedulable = "MoverUnschedulable"

// EventReasonMoverUnschedulable (Warning) is recorded on the backup or
// restore when its data mover pod starts to wait for a node.
const EventReasonMoverUnschedulable = ReasonMoverUnschedulable

// EventReasonSecretNotFound (Warning) is recorded on the backup or
// restore when it starts to wait for a Secret, and on each attempt to
// delete an artifact whose storage Secret is missing.
const EventReasonSecretNotFound = ReasonSecretNotFound

// BackupStorageClaimLabel opts a PersistentVolumeClaim in as backup
// storage: a backup, schedule or restore may name (in
// storage.persistentVolumeClaim) only a claim of its namespace that
// carries this label with the value "true". The data mover mounts that
// claim read-write; setting the label takes the right to edit claims,
// which the Echo roles do not grant.
const BackupStorageClaimLabel = "echo.dev/backup-storage"

// ReasonClaimNotOptedIn is the condition and Event reason of a backup or
// restore whose storage names a claim that does not exist or lacks
// BackupStorageClaimLabel.
const ReasonClaimNotOptedIn = "ClaimNotOptedIn"

// EventReasonClaimNotOptedIn (Warning) is recorded on the backup or
// restore whose data mover Job was not created, with what to label.
const EventReasonClaimNotOptedIn = ReasonClaimNotOptedIn

// ReasonDataClaimNotOwned is the condition and Event reason of a backup
// or restore of an Echo whose data claim (<echo>-data) is not its
// release's: Helm's ownership annotations do not name the Echo's release,
// or its controller is not that Echo. A backup would read, a restore
// write, another workload's data.
const ReasonDataClaimNotOwned = "DataClaimNotOwned"

// EventReasonDataClaimNotOwned (Warning) is recorded on the backup or
// restore whose data mover Job was not created.
const EventReasonDataClaimNotOwned = ReasonDataClaimNotOwned

// StorageEndpointsAnnotation, on an opted-in ServiceAccount
// (StorageIdentityLabel) or on a Secret holding an SSE-C key, lists
// comma-separated the endpoints the data movers and the live API may send
// its token or key to: http(s)://host[:port], matched on scheme, host
// and port (443 for https and 80 for http when not given), without
// wildcards. A ServiceAccount's token goes to the STS, and the
// credentials it buys to the storage: both must be listed. Without the
// annotation nothing is allowed.
const StorageEndpointsAnnotation = "echo.dev/storage-endpoints"

// ReasonEndpointNotAllowed is the condition and Event reason of a backup
// or restore whose ServiceAccount token or SSE-C key would go to an
// endpoint its owner did not list in StorageEndpointsAnnotation, or to an
// STS over plain http.
const ReasonEndpointNotAllowed = "EndpointNotAllowed"

// EventReasonEndpointNotAllowed (Warning) is recorded on the backup or
// restore whose data mover Job was not created, with what to allow.
const EventReasonEndpointNotAllowed = ReasonEndpointNotAllowed

// StorageSecretOptedIn reports whether a Secret with these labels opted in
// as storage credentials: StorageSecretLabel with the value "true".
func StorageSecretOptedIn(labels map[string]string) bool {
	return labels[StorageSecretLabel] == "true"
}

// BackupStorage is where backup artifacts are kept: S3-compatible object
// storage, a PersistentVolumeClaim, or the storage of an
// EchoBackupLocation. Exactly one is set.
//
// +kubebuilder:validation:XValidation:rule="[has(self.s3), has(self.persistentVolumeClaim), has(self.locationRef)].filter(x, x).size() == 1",message="set exactly one of storage.s3, storage.persistentVolumeClaim and storage.locationRef"
type BackupStorage struct {
	// S3 stores artifacts in a bucket of an S3-compatible object store.
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`

	// PersistentVolumeClaim stores artifacts in a claim of the backup's namespace.
	// +optional
	PersistentVolumeClaim *PVCStorage `json:"persistentVolumeClaim,omitempty"`

	// LocationRef stores artifacts in the storage of an EchoBackupLocation
	// of the same namespace: its endpoint, bucket, prefix, credentials and
	// CA bundle apply, as they are when a data mover Job starts.
	// +optional
	LocationRef *LocationReference `json:"locationRef,omitempty"`
}

// LocationReference names an EchoBackupLocation of the same namespace.
type LocationReference struct {
	// Name of the EchoBackupLocation.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="an EchoBackupLocation name is a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit, e.g. offsite"
	// +required
	Name string `json:"name"`
}

// LocationName is the name of the EchoBackupLocation the storage refers
// to, or "" when the storage is inline.
func (s *BackupStorage) LocationName() string {
	if s == nil || s.LocationRef == nil {
		return ""
	}
	return s.LocationRef.Name
}

// S3Storage locates a bucket of an S3-compatible object store.
//
// +kubebuilder:validation:XValidation:rule="has(self.credentialsSecretRef) != has(self.identity)",message="set exactly one of storage.s3.credentialsSecretRef and storage.s3.identity"
// +kubebuilder:validation:XValidation:rule="!has(self.encryption) || self.encryption.type != 'SSE-C' || url(self.endpoint).getScheme() == 'https'",message="storage.s3.encryption type SSE-C sends the key with every request: the endpoint must be https"
// +kubebuilder:validation:XValidation:rule="!has(self.identity) || has(self.identity.stsEndpoint) || url(self.endpoint).getScheme() == 'https'",message="storage.s3.identity sends a ServiceAccount token to the STS, by default the endpoint: the endpoint must be https, or set an https identity.stsEndpoint"
type S3Storage struct {
	// Bucket name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	// +required
	Bucket string `json:"bucket"`

	// Endpoint is the URL of the object store, e.g. https://s3.eu-west-1.amazonaws.com
	// or http://minio.storage.svc:9000. Credentials go in the Secret that
	// CredentialsSecretRef names, never in the URL.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && (url(self).getScheme() == 'http' || url(self).getScheme() == 'https')",message="storage.s3.endpoint must be an http or https URL"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[^:/?#]*://[^/?#]*@')",message="storage.s3.endpoint must not carry credentials (user:password@host): put them in the Secret that credentialsSecretRef names"
	// +required
	Endpoint string `json:"endpoint"`

	// Region of the bucket.
	// +kubebuilder:default="us-east-1"
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region string `json:"region,omitempty"`

	// Prefix is prepended to every artifact key, e.g. "team-a/echo".
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9!_.*'()-]+/)*[A-Za-z0-9!_.*'()-]*$`
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// ForcePathStyle addresses the bucket as <endpoint>/<bucket> rather
	// than <bucket>.<endpoint>, as most self-hosted stores need.
	// +kubebuilder:default=false
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// CredentialsSecretRef names a Secret of the backup's namespace holding
	// the access key ID and secret access key (and a session token, when
	// they are temporary). Exclusive with Identity.
	// +optional
	CredentialsSecretRef *S3CredentialsSecretRef `json:"credentialsSecretRef,omitempty"`

	// Identity authenticates the data mover with the token of a
	// ServiceAccount (workload identity) rather than keys. Exclusive with
	// CredentialsSecretRef.
	// +optional
	Identity *S3Identity `json:"identity,omitempty"`

	// CABundle names a key of a Secret of the backup's namespace holding
	// the PEM certificates that sign the endpoint's certificate.
	// +optional
	CABundle *SecretKeyRef `json:"caBundle,omitempty"`

	// Encryption has the store encrypt a backup's objects (its archive and
	// its manifest) at rest. A restore, an inspection or a listing of the
	// live API reads SSE-C objects only with the same key; SSE-S3 and
	// SSE-KMS objects are decrypted by the store for whoever may read them.
	// +optional
	Encryption *S3Encryption `json:"encryption,omitempty"`
}

// S3Identity is the workload identity of the data mover: its Jobs run as
// the ServiceAccount, with a projected token of Audience, which they
// exchange at the STS endpoint (AssumeRoleWithWebIdentity) for temporary
// credentials, as IRSA on EKS and MinIO's OpenID identity do.
type S3Identity struct {
	// ServiceAccountName names a ServiceAccount of the same namespace,
	// which must carry the label echo.dev/storage-identity=true.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="a ServiceAccount name must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, e.g. echo-backup"
	// +required
	ServiceAccountName string `json:"serviceAccountName"`

	// Audience of the token: what the STS expects (sts.amazonaws.com on
	// AWS; the client id of MinIO's OpenID configuration). The
	// ServiceAccount must allow it (annotation
	// echo.dev/storage-identity-audiences) unless it is sts.amazonaws.com.
	// +kubebuilder:default="sts.amazonaws.com"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Audience string `json:"audience,omitempty"`

	// RoleARN is the role to assume, e.g.
	// arn:aws:iam::111122223333:role/echo-backup; optional where the STS
	// maps the token to a policy itself (MinIO).
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	RoleARN string `json:"roleARN,omitempty"`

	// STSEndpoint is where the token is exchanged, e.g.
	// https://sts.eu-west-3.amazonaws.com: an https URL, since the token
	// is a bearer credential. Defaults to the storage's endpoint, where
	// MinIO serves its STS. The ServiceAccount must list it in its
	// annotation echo.dev/storage-endpoints.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https'",message="storage.s3.identity.stsEndpoint must be an https URL: the token it is sent is a bearer credential"
	// +optional
	STSEndpoint string `json:"stsEndpoint,omitempty"`
}

// ServiceAccountName is the ServiceAccount of the storage's identity, or
// "" when it authenticates with keys.
func (s *S3Storage) ServiceAccountName() string {
	if s == nil || s.Identity == nil {
		return ""
	}
	return s.Identity.ServiceAccountName
}

// S3EncryptionType is how the store encrypts objects at rest.
// +kubebuilder:validation:Enum=SSE-S3;SSE-KMS;SSE-C
type S3EncryptionType string

// The server-side encryption types.
const (
	// EncryptionSSES3 encrypts with a key the store manages.
	EncryptionSSES3 S3EncryptionType = "SSE-S3"
	// EncryptionSSEKMS encrypts with a key of the store's KMS, KMSKeyID.
	EncryptionSSEKMS S3EncryptionType = "SSE-KMS"
	// EncryptionSSEC encrypts with a key of yours (CustomerKey), sent with
	// every request and never stored by the store.
	EncryptionSSEC S3EncryptionType = "SSE-C"
)

// S3Encryption is the server-side encryption of a backup's objects.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'SSE-KMS' ? has(self.kmsKeyID) : !has(self.kmsKeyID)",message="storage.s3.encryption.kmsKeyID is required with type SSE-KMS, and only then"
// +kubebuilder:validation:XValidation:rule="self.type == 'SSE-C' ? has(self.customerKey) : !has(self.customerKey)",message="storage.s3.encryption.customerKey is required with type SSE-C, and only then"
type S3Encryption struct {
	// Type is SSE-S3 (a key the store manages), SSE-KMS (a key of the
	// store's KMS, kmsKeyID) or SSE-C (your key, customerKey).
	// +required
	Type S3EncryptionType `json:"type"`

	// KMSKeyID is the id (or ARN) of the store's KMS key, for SSE-KMS.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	KMSKeyID string `json:"kmsKeyID,omitempty"`

	// CustomerKey names a key of a Secret of the same namespace holding
	// the 256-bit key of SSE-C: 32 bytes, or their base64 encoding. The
	// Secret must carry the label echo.dev/storage-credentials=true, as
	// the credentials' does, and list the endpoint in its annotation
	// echo.dev/storage-endpoints. Keep the key: without it no backup written
	// with it can be read again.
	// +optional
	CustomerKey *SecretKeyRef `json:"customerKey,omitempty"`
}

// SecretNames lists the Secrets of the namespace the storage names, each
// once: the credentials, then the CA bundle's. A claim names none, nor
// does a reference to a location, whose storage names them.
func (s *BackupStorage) SecretNames() []string {
	return s.S3.SecretNames()
}

// SecretNames lists the Secrets the bucket's access names, each once: the
// credentials, then the CA bundle's, then the SSE-C key's.
func (s *S3Storage) SecretNames() []string {
	if s == nil {
		return nil
	}
	var names []string
	if creds := s.CredentialsSecretRef; creds != nil {
		names = append(names, creds.Name)
	}
	if ca := s.CABundle; ca != nil && !slices.Contains(names, ca.Name) {
		names = append(names, ca.Name)
	}
	if key := s.CustomerKey(); key != nil && !slices.Contains(names, key.Name) {
		names = append(names, key.Name)
	}
	return names
}

// CustomerKey is the Secret key of the storage's SSE-C key, or nil when it
// has none.
func (s *S3Storage) CustomerKey() *SecretKeyRef {
	if s == nil || s.Encryption == nil || s.Encryption.Type != EncryptionSSEC {
		return nil
	}
	return s.Encryption.CustomerKey
}

// S3CredentialsSecretRef names a Secret holding S3 credentials.
type S3CredentialsSecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="a Secret name must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, e.g. s3-credentials"
	// +required
	Name string `json:"name"`

	// AccessKeyIDKey is the key of the access key ID in the Secret.
	// +kubebuilder:default="AWS_ACCESS_KEY_ID"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && !self.startsWith('..')",message="a Secret key must consist of letters, digits, '-', '_' or '.', not be '.' and not start with '..', e.g. AWS_ACCESS_KEY_ID"
	// +optional
	AccessKeyIDKey string `json:"accessKeyIDKey,omitempty"`

	// SecretAccessKeyKey is the key of the secret access key in the Secret.
	// +kubebuilder:default="AWS_SECRET_ACCESS_KEY"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && !self.startsWith('..')",message="a Secret key must consist of letters, digits, '-', '_' or '.', not be '.' and not start with '..', e.g. AWS_SECRET_ACCESS_KEY"
	// +optional
	SecretAccessKeyKey string `json:"secretAccessKeyKey,omitempty"`

	// SessionTokenKey is the key of a session token in the Secret, for
	// temporary credentials; none when empty.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && !self.startsWith('..')",message="a Secret key must consist of letters, digits, '-', '_' or '.', not be '.' and not start with '..', e.g. AWS_SESSION_TOKEN"
	// +optional
	SessionTokenKey string `json:"sessionTokenKey,omitempty"`
}

// SecretKeyRef names one key of a Secret in the same namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="a Secret name must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, e.g. s3-credentials"
	// +required
	Name string `json:"name"`

	// Key in the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$') && self != '.' && !self.startsWith('..')",message="a Secret key must consist of letters, digits, '-', '_' or '.', not be '.' and not start with '..', e.g. ca.crt"
	// +required
	Key string `json:"key"`
}

// PVCStorage stores artifacts in a PersistentVolumeClaim.
type PVCStorage struct {
	// ClaimName names the claim, in the backup's namespace, which must
	// carry the label echo.dev/backup-storage=true.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="a claim name must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit, e.g. backups"
	// +required
	ClaimName string `json:"claimName"`

	// SubPath is a directory inside the claim that holds the artifacts.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(p, p == '..')",message="storage.persistentVolumeClaim.subPath must be a relative path without '..'"
	// +optional
	SubPath string `json:"subPath,omitempty"`
}
