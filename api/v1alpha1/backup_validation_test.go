package v1alpha1_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// object is an object of one of the echo.dev kinds, unstructured so that
// it can hold values the Go types cannot.
func object(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// s3Storage is the storage of a backup in an S3 bucket, unstructured.
func s3Storage(mutate ...func(map[string]any)) map[string]any {
	s3 := map[string]any{
		"bucket":               "echo-backups",
		"endpoint":             "https://s3.example.test",
		"credentialsSecretRef": map[string]any{"name": "s3-credentials"},
	}
	for _, m := range mutate {
		m(s3)
	}
	return map[string]any{"s3": s3}
}

// encryption sets the storage's encryption.
func encryption(e map[string]any) func(map[string]any) {
	return func(s map[string]any) { s["encryption"] = e }
}

// The backup kinds reject bad input at admission, as Echo does.
func TestBackupKindsValidateAtAdmission(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	ctx := context.Background()

	cases := []struct {
		name, kind string
		spec       map[string]any
		want       string // empty: accepted
	}{
		{"backup to S3", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage()}, ""},
		{"backup to a claim", "EchoBackup", map[string]any{"echoName": "web",
			"storage": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "backups", "subPath": "echo/web"}}}, ""},
		{"backup to a location", "EchoBackup", map[string]any{"echoName": "web",
			"storage": map[string]any{"locationRef": map[string]any{"name": "offsite"}}}, ""},
		{"backup without storage", "EchoBackup", map[string]any{"echoName": "web", "storage": map[string]any{}},
			"set exactly one of storage.s3, storage.persistentVolumeClaim and storage.locationRef"},
		{"backup to two places", "EchoBackup", map[string]any{"echoName": "web", "storage": map[string]any{
			"s3": s3Storage()["s3"], "persistentVolumeClaim": map[string]any{"claimName": "backups"}}},
			"set exactly one of storage.s3, storage.persistentVolumeClaim and storage.locationRef"},
		{"backup to a location and a bucket", "EchoBackup", map[string]any{"echoName": "web", "storage": map[string]any{
			"s3": s3Storage()["s3"], "locationRef": map[string]any{"name": "offsite"}}},
			"set exactly one of storage.s3, storage.persistentVolumeClaim and storage.locationRef"},
		{"a location in another namespace", "EchoBackup", map[string]any{"echoName": "web",
			"storage": map[string]any{"locationRef": map[string]any{"name": "other/offsite"}}}, "an EchoBackupLocation name is a DNS-1123 label"},
		{"endpoint that is no URL", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["endpoint"] = "ftp://files.example.test" })}, "must be an http or https URL"},
		{"bad bucket", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["bucket"] = "Echo_Backups" })}, "spec.storage.s3.bucket"},
		{"escaping sub-path", "EchoBackup", map[string]any{"echoName": "web",
			"storage": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "backups", "subPath": "a/../../etc"}}},
			"must be a relative path without '..'"},
		{"unknown compression", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(), "compression": "zstd"}, "spec.compression"},
		{"no Echo named", "EchoBackup", map[string]any{"storage": s3Storage()}, "spec.echoName"},
		{"Echo name that is no Echo's", "EchoBackup", map[string]any{"echoName": "Web_1", "storage": s3Storage()},
			"echoName must be an Echo's name"},
		{"credentials in the endpoint", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["endpoint"] = "https://key:secret@s3.example.test" })}, "must not carry credentials"},
		{"access key in the endpoint", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["endpoint"] = "https://key@s3.example.test:9000" })}, "must not carry credentials"},
		{"endpoint with @ in its path", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["endpoint"] = "https://s3.example.test:9000/team@a" })}, ""},
		{"credentials Secret that is no name", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["credentialsSecretRef"] = map[string]any{"name": "S3 Credentials"} })},
			"a Secret name must be a DNS-1123 subdomain"},
		{"credentials Secret with dots", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["credentialsSecretRef"] = map[string]any{"name": "s3.credentials-1"} })}, ""},
		{"access key ID key with a slash", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) {
				s["credentialsSecretRef"] = map[string]any{"name": "s3", "accessKeyIDKey": "aws/access-key"}
			})}, "a Secret key must consist of letters, digits"},
		{"secret access key key starting with ..", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) {
				s["credentialsSecretRef"] = map[string]any{"name": "s3", "secretAccessKeyKey": "..data"}
			})}, "a Secret key must consist of letters, digits"},
		{"Secret keys of every allowed character", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) {
				s["credentialsSecretRef"] = map[string]any{"name": "s3", "accessKeyIDKey": "aws.Access_key-ID", "secretAccessKeyKey": ".secret"}
			})}, ""},
		{"CA bundle Secret that is no name", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["caBundle"] = map[string]any{"name": "CA_Bundle", "key": "ca.crt"} })},
			"a Secret name must be a DNS-1123 subdomain"},
		{"CA bundle key with a space", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["caBundle"] = map[string]any{"name": "ca", "key": "ca crt"} })},
			"a Secret key must consist of letters, digits"},
		{"CA bundle", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["caBundle"] = map[string]any{"name": "ca-bundle", "key": "ca.crt"} })}, ""},
		{"SSE-S3", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(encryption(map[string]any{"type": "SSE-S3"}))}, ""},
		{"SSE-KMS", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(encryption(map[string]any{"type": "SSE-KMS", "kmsKeyID": "arn:aws:kms:eu-west-1:111122223333:key/echo"}))}, ""},
		{"SSE-C", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(encryption(map[string]any{"type": "SSE-C", "customerKey": map[string]any{"name": "backup-key", "key": "key"}}))}, ""},
		{"an unknown encryption", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(encryption(map[string]any{"type": "AES256"}))},
			"spec.storage.s3.encryption.type"},
		{"SSE-KMS without a key", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(encryption(map[string]any{"type": "SSE-KMS"}))},
			"kmsKeyID is required with type SSE-KMS, and only then"},
		{"a KMS key without SSE-KMS", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(encryption(map[string]any{"type": "SSE-S3", "kmsKeyID": "echo"}))}, "kmsKeyID is required with type SSE-KMS, and only then"},
		{"SSE-C without a key", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(encryption(map[string]any{"type": "SSE-C"}))},
			"customerKey is required with type SSE-C, and only then"},
		{"a customer key without SSE-C", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(encryption(map[string]any{"type": "SSE-KMS", "kmsKeyID": "echo", "customerKey": map[string]any{"name": "k", "key": "key"}}))},
			"customerKey is required with type SSE-C, and only then"},
		{"SSE-C over http", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			s["endpoint"] = "http://minio.storage.svc:9000"
			s["encryption"] = map[string]any{"type": "SSE-C", "customerKey": map[string]any{"name": "backup-key", "key": "key"}}
		})}, "SSE-C sends the key with every request: the endpoint must be https"},
		{"SSE-S3 over http", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			s["endpoint"] = "http://minio.storage.svc:9000"
			s["encryption"] = map[string]any{"type": "SSE-S3"}
		})}, ""},
		{"a customer key Secret that is no name", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(encryption(map[string]any{"type": "SSE-C", "customerKey": map[string]any{"name": "Backup_Key", "key": "key"}}))},
			"a Secret name must be a DNS-1123 subdomain"},
		{"an encrypted location", "EchoBackupLocation", map[string]any{
			"s3": s3Storage(encryption(map[string]any{"type": "SSE-KMS", "kmsKeyID": "echo"}))["s3"]}, ""},
		{"an identity in place of credentials", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			delete(s, "credentialsSecretRef")
			s["identity"] = map[string]any{"serviceAccountName": "echo-backup", "roleARN": "arn:aws:iam::111122223333:role/echo-backup",
				"stsEndpoint": "https://sts.eu-west-3.amazonaws.com"}
		})}, ""},
		{"neither credentials nor an identity", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { delete(s, "credentialsSecretRef") })},
			"set exactly one of storage.s3.credentialsSecretRef and storage.s3.identity"},
		{"credentials and an identity", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			s["identity"] = map[string]any{"serviceAccountName": "echo-backup"}
		})}, "set exactly one of storage.s3.credentialsSecretRef and storage.s3.identity"},
		{"an identity that is no ServiceAccount name", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			delete(s, "credentialsSecretRef")
			s["identity"] = map[string]any{"serviceAccountName": "system:serviceaccount:kube-system:admin"}
		})}, "a ServiceAccount name must be a DNS-1123 subdomain"},
		{"an STS endpoint that is no URL", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			delete(s, "credentialsSecretRef")
			s["identity"] = map[string]any{"serviceAccountName": "echo-backup", "stsEndpoint": "sts.amazonaws.com"}
		})}, "storage.s3.identity.stsEndpoint must be an https URL"},
		// The token is a bearer credential the real STS accepts.
		{"an STS over http", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			delete(s, "credentialsSecretRef")
			s["identity"] = map[string]any{"serviceAccountName": "echo-backup", "stsEndpoint": "http://sts.amazonaws.com"}
		})}, "storage.s3.identity.stsEndpoint must be an https URL: the token it is sent is a bearer credential"},
		{"the storage's own STS over http", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			delete(s, "credentialsSecretRef")
			s["endpoint"] = "http://minio.storage.svc:9000"
			s["identity"] = map[string]any{"serviceAccountName": "echo-backup", "audience": "minio"}
		})}, "storage.s3.identity sends a ServiceAccount token to the STS, by default the endpoint: the endpoint must be https"},
		{"an http storage with an https STS", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			delete(s, "credentialsSecretRef")
			s["endpoint"] = "http://minio.storage.svc:9000"
			s["identity"] = map[string]any{"serviceAccountName": "echo-backup", "stsEndpoint": "https://sts.example.test"}
		})}, ""},
		{"a location's STS over http", "EchoBackupLocation", map[string]any{"s3": s3Storage(func(s map[string]any) {
			delete(s, "credentialsSecretRef")
			s["identity"] = map[string]any{"serviceAccountName": "echo-backup", "stsEndpoint": "http://sts.amazonaws.com"}
		})["s3"]}, "storage.s3.identity.stsEndpoint must be an https URL"},
		{"temporary credentials", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(func(s map[string]any) {
			s["credentialsSecretRef"] = map[string]any{"name": "s3", "sessionTokenKey": "AWS_SESSION_TOKEN"}
		})}, ""},
		{"claim that is no name", "EchoBackup", map[string]any{"echoName": "web",
			"storage": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "Backups_1"}}}, "a claim name must be a DNS-1123 subdomain"},
		{"claim with dots", "EchoBackup", map[string]any{"echoName": "web",
			"storage": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "backups.v1"}}}, ""},

		{"daily schedule", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"cron schedule with zone", "EchoBackupSchedule", map[string]any{"schedule": "*/15 2-4 * * MON-FRI", "timeZone": "Europe/Paris",
			"retention": map[string]any{"keepLast": 7, "maxAge": "168h"}, "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"interval schedule", "EchoBackupSchedule", map[string]any{"schedule": "@every 1h30m", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"prose schedule", "EchoBackupSchedule", map[string]any{"schedule": "every night", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "spec.schedule"},
		{"four-field schedule", "EchoBackupSchedule", map[string]any{"schedule": "0 2 * *", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "spec.schedule"},
		{"empty retention", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "retention needs keepLast, maxAge or both"},
		{"interval under a minute", "EchoBackupSchedule", map[string]any{"schedule": "@every 30s", "template": map[string]any{"echoName": "web", "storage": s3Storage()}},
			"an @every interval must be a Go duration of at least 1m"},
		{"interval of a second", "EchoBackupSchedule", map[string]any{"schedule": "@every 1s", "template": map[string]any{"echoName": "web", "storage": s3Storage()}},
			"an @every interval must be a Go duration of at least 1m"},
		{"interval of 59.9 seconds", "EchoBackupSchedule", map[string]any{"schedule": "@every 59.9s", "template": map[string]any{"echoName": "web", "storage": s3Storage()}},
			"an @every interval must be a Go duration of at least 1m"},
		{"interval of a minute", "EchoBackupSchedule", map[string]any{"schedule": "@every 1m", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"interval of 60 seconds", "EchoBackupSchedule", map[string]any{"schedule": "@every 60s", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"hourly schedule", "EchoBackupSchedule", map[string]any{"schedule": "@hourly", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"every minute by cron", "EchoBackupSchedule", map[string]any{"schedule": "* * * * *", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"maximum age in days", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{"maxAge": "7d"},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "maxAge must be a positive Go duration such as 168h"},
		{"negative maximum age", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{"maxAge": "-5m"},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "maxAge must be a positive Go duration such as 168h"},
		{"zero maximum age", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{"maxAge": "0s"},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "maxAge must be a positive Go duration such as 168h"},
		{"maximum age in hours and minutes", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{"maxAge": "36h30m"},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"keep none", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{"keepLast": 0},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "spec.retention.keepLast"},

		{"restore from a backup", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}}, ""},
		{"restore from a bare artifact", "EchoRestore", map[string]any{"source": map[string]any{"storage": s3Storage(), "key": "team/web/web-1"}, "echoName": "web2"}, ""},
		{"restore from two sources", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1", "storage": s3Storage(), "key": "k"}},
			"set exactly one of source.backupName, source.storedBackup and source.storage"},
		{"restore from a stored backup", "EchoRestore", map[string]any{"source": map[string]any{"storedBackup": "offsite.team.web.web-1"}}, ""},
		{"restore from a stored backup and a backup", "EchoRestore", map[string]any{"source": map[string]any{"storedBackup": "offsite.team.web.web-1", "backupName": "web-1"}},
			"set exactly one of source.backupName, source.storedBackup and source.storage"},
		{"restore from a name no listing gives", "EchoRestore", map[string]any{"source": map[string]any{"storedBackup": "team/web/web-1"}},
			"source.storedBackup is the name kubectl get storedbackups shows"},
		{"bare artifact without a target", "EchoRestore", map[string]any{"source": map[string]any{"storage": s3Storage(), "key": "team/web/web-1"}},
			"echoName is required when restoring from source.storage"},
		{"storage without a key", "EchoRestore", map[string]any{"source": map[string]any{"storage": s3Storage()}}, "source.key goes with source.storage"},
		{"unknown existing-data policy", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}, "existingData": "Merge"}, "spec.existingData"},
		{"a restore timeout of hours", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}, "timeout": "6h30m"}, ""},
		{"a restore timeout under a minute", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}, "timeout": "30s"},
			"timeout must be a Go duration from 1m to 720h"},
		{"a restore timeout over 30 days", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}, "timeout": "721h"},
			"timeout must be a Go duration from 1m to 720h"},
		{"a restore timeout in days", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}, "timeout": "2d"},
			"spec.timeout"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			RegisterTestingT(t)
			obj := object(tc.kind, ns, "case-"+strconv.Itoa(i), tc.spec)
			err := k8sClient.Create(ctx, obj, client.DryRunAll)
			if tc.want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}

	t.Run("a location name must begin stored backup names", func(t *testing.T) {
		RegisterTestingT(t)
		spec := map[string]any{"s3": s3Storage()["s3"]}
		for _, name := range []string{"off.site", strings.Repeat("a", 64)} {
			err := k8sClient.Create(ctx, object("EchoBackupLocation", ns, name, spec), client.DryRunAll)
			Expect(err).To(MatchError(ContainSubstring("an EchoBackupLocation name must be a DNS-1123 label")), name)
		}
		Expect(k8sClient.Create(ctx, object("EchoBackupLocation", ns, strings.Repeat("a", 63), spec), client.DryRunAll)).To(Succeed())
		err := k8sClient.Create(ctx, object("EchoBackupLocation", ns, "no-s3", map[string]any{}), client.DryRunAll)
		Expect(err).To(MatchError(ContainSubstring("spec.s3")))
	})

	t.Run("names that cannot label a Job or a backup", func(t *testing.T) {
		RegisterTestingT(t)
		specs := map[string]map[string]any{
			"EchoBackup":         {"echoName": "web", "storage": s3Storage()},
			"EchoBackupSchedule": {"schedule": "@daily", "template": map[string]any{"echoName": "web", "storage": s3Storage()}},
			"EchoRestore":        {"source": map[string]any{"backupName": "web-1"}},
		}
		for kind, spec := range specs {
			err := k8sClient.Create(ctx, object(kind, ns, strings.Repeat("a", 64), spec), client.DryRunAll)
			Expect(err).To(MatchError(ContainSubstring("an "+kind+" name is at most 63 characters")), kind)
			Expect(k8sClient.Create(ctx, object(kind, ns, strings.Repeat("a", 63), spec), client.DryRunAll)).To(Succeed(), kind)
		}
	})

	t.Run("defaults and an immutable spec", func(t *testing.T) {
		RegisterTestingT(t)
		b := &echov1alpha1.EchoBackup{}
		b.Namespace, b.Name = ns, "immutable"
		b.Spec = echov1alpha1.EchoBackupSpec{EchoName: "web", Storage: echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
			Bucket: "echo-backups", Endpoint: "http://minio.example.test:9000",
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3"}}}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Expect(b.Spec.Compression).To(Equal(echov1alpha1.CompressionGzip))
		Expect(b.Spec.DeletionPolicy).To(Equal(echov1alpha1.DeletionPolicyRetain))
		Expect(b.Spec.Storage.S3.Region).To(Equal("us-east-1"))
		Expect(b.Spec.Storage.S3.CredentialsSecretRef.AccessKeyIDKey).To(Equal("AWS_ACCESS_KEY_ID"))

		rs := &echov1alpha1.EchoRestore{}
		rs.Namespace, rs.Name = ns, "defaulted"
		rs.Spec.Source.BackupName = "web-1"
		Expect(k8sClient.Create(ctx, rs, client.DryRunAll)).To(Succeed())
		Expect(rs.Spec.Timeout).To(HaveValue(HaveField("Duration", echov1alpha1.DefaultRestoreTimeout)),
			"the schema's default is the operator's")

		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			latest := &echov1alpha1.EchoBackup{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(b), latest); err != nil {
				return err
			}
			latest.Spec.EchoName = "other"
			return k8sClient.Update(ctx, latest)
		})
		Expect(err).To(MatchError(ContainSubstring("an EchoBackup's spec is immutable")))
	})
}
