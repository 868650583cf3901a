package v1alpha1

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
	// the access key ID and secret access key.
	// +required
	CredentialsSecretRef S3CredentialsSecretRef `json:"credentialsSecretRef"`

	// CABundle names a key of a Secret of the backup's namespace holding
	// the PEM certificates that sign the endpoint's certificate.
	// +optional
	CABundle *SecretKeyRef `json:"caBundle,omitempty"`
}

// SecretNames lists the Secrets of the namespace the storage names, each
// once: the credentials, then the CA bundle's. A claim names none, nor
// does a reference to a location, whose storage names them.
func (s *BackupStorage) SecretNames() []string {
	return s.S3.SecretNames()
}

// SecretNames lists the Secrets the bucket's access names, each once: the
// credentials, then the CA bundle's.
func (s *S3Storage) SecretNames() []string {
	if s == nil {
		return nil
	}
	names := []string{s.CredentialsSecretRef.Name}
	if ca := s.CABundle; ca != nil && ca.Name != s.CredentialsSecretRef.Name {
		names = append(names, ca.Name)
	}
	return names
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
	// ClaimName names the claim, in the backup's namespace.
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
