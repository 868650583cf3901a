package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func object(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind(kind))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

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
		{"backup without storage", "EchoBackup", map[string]any{"echoName": "web", "storage": map[string]any{}},
			"set exactly one of storage.s3 and storage.persistentVolumeClaim"},
		{"backup to two places", "EchoBackup", map[string]any{"echoName": "web", "storage": map[string]any{
			"s3": s3Storage()["s3"], "persistentVolumeClaim": map[string]any{"claimName": "backups"}}},
			"set exactly one of storage.s3 and storage.persistentVolumeClaim"},
		{"endpoint that is no URL", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["endpoint"] = "ftp://files.example.test" })}, "must be an http or https URL"},
		{"bad bucket", "EchoBackup", map[string]any{"echoName": "web",
			"storage": s3Storage(func(s map[string]any) { s["bucket"] = "Echo_Backups" })}, "spec.storage.s3.bucket"},
		{"escaping sub-path", "EchoBackup", map[string]any{"echoName": "web",
			"storage": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "backups", "subPath": "a/../../etc"}}},
			"must be a relative path without '..'"},
		{"unknown compression", "EchoBackup", map[string]any{"echoName": "web", "storage": s3Storage(), "compression": "zstd"}, "spec.compression"},
		{"no Echo named", "EchoBackup", map[string]any{"storage": s3Storage()}, "spec.echoName"},

		{"daily schedule", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"cron schedule with zone", "EchoBackupSchedule", map[string]any{"schedule": "*/15 2-4 * * MON-FRI", "timeZone": "Europe/Paris",
			"retention": map[string]any{"keepLast": 7, "maxAge": "168h"}, "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"interval schedule", "EchoBackupSchedule", map[string]any{"schedule": "@every 1h30m", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, ""},
		{"prose schedule", "EchoBackupSchedule", map[string]any{"schedule": "every night", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "spec.schedule"},
		{"four-field schedule", "EchoBackupSchedule", map[string]any{"schedule": "0 2 * *", "template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "spec.schedule"},
		{"empty retention", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "retention needs keepLast, maxAge or both"},
		{"keep none", "EchoBackupSchedule", map[string]any{"schedule": "@daily", "retention": map[string]any{"keepLast": 0},
			"template": map[string]any{"echoName": "web", "storage": s3Storage()}}, "spec.retention.keepLast"},

		{"restore from a backup", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}}, ""},
		{"restore from a bare artifact", "EchoRestore", map[string]any{"source": map[string]any{"storage": s3Storage(), "key": "team/web/web-1"}, "echoName": "web2"}, ""},
		{"restore from two sources", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1", "storage": s3Storage(), "key": "k"}},
			"set exactly one of source.backupName and source.storage"},
		{"bare artifact without a target", "EchoRestore", map[string]any{"source": map[string]any{"storage": s3Storage(), "key": "team/web/web-1"}},
			"echoName is required when restoring from a storage location"},
		{"storage without a key", "EchoRestore", map[string]any{"source": map[string]any{"storage": s3Storage()}}, "source.key goes with source.storage"},
		{"unknown existing-data policy", "EchoRestore", map[string]any{"source": map[string]any{"backupName": "web-1"}, "existingData": "Merge"}, "spec.existingData"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			RegisterTestingT(t)
			obj := object(tc.kind, ns, "case-"+itoa(int64(i)), tc.spec)
			err := k8sClient.Create(ctx, obj, client.DryRunAll)
			if tc.want == "" {
				Expect(err).NotTo(HaveOccurred())
				return
			}
			Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}

	t.Run("defaults and an immutable spec", func(t *testing.T) {
		RegisterTestingT(t)
		b := &echov1alpha1.EchoBackup{}
		b.Namespace, b.Name = ns, "immutable"
		b.Spec = echov1alpha1.EchoBackupSpec{EchoName: "web", Storage: echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{
			Bucket: "echo-backups", Endpoint: "http://minio.example.test:9000",
			CredentialsSecretRef: echov1alpha1.S3CredentialsSecretRef{Name: "s3"}}}}
		Expect(k8sClient.Create(ctx, b)).To(Succeed())
		Expect(b.Spec.Compression).To(Equal(echov1alpha1.CompressionGzip))
		Expect(b.Spec.DeletionPolicy).To(Equal(echov1alpha1.DeletionPolicyRetain))
		Expect(b.Spec.Storage.S3.Region).To(Equal("us-east-1"))
		Expect(b.Spec.Storage.S3.CredentialsSecretRef.AccessKeyIDKey).To(Equal("AWS_ACCESS_KEY_ID"))

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
