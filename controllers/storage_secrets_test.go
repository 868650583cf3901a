package controllers

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

func TestStorageSecretsOptedIn(t *testing.T) {
	secret := func(name string, labels map[string]string) client.Object {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: labels},
			Data: map[string][]byte{"password": []byte("hunter2")}}
	}
	optedIn := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	s3 := func(creds, ca string) echov1alpha1.BackupStorage {
		s := &echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "b",
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: creds}}
		if ca != "" {
			s.CABundle = &echov1alpha1.SecretKeyRef{Name: ca, Key: "ca.crt"}
		}
		return echov1alpha1.BackupStorage{S3: s}
	}
	cases := []struct {
		name    string
		secrets []client.Object
		storage echov1alpha1.BackupStorage
		refused []string // nil: allowed
	}{
		{"an opted-in claim names no Secret", []client.Object{&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "backups",
			Labels: map[string]string{echov1alpha1.BackupStorageClaimLabel: "true"}}}},
			echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: "backups"}}, nil},
		{"opted-in credentials", []client.Object{secret("creds", optedIn)}, s3("creds", ""), nil},
		{"opted-in credentials and CA bundle", []client.Object{secret("creds", optedIn), secret("ca", optedIn)}, s3("creds", "ca"), nil},
		{"credentials without the label", []client.Object{secret("db-credentials", map[string]string{"app": "db"})}, s3("db-credentials", ""), []string{"db-credentials"}},
		{"credentials with the label set to another value", []client.Object{secret("creds", map[string]string{echov1alpha1.StorageSecretLabel: "yes"})}, s3("creds", ""), []string{"creds"}},
		{"a CA bundle without the label", []client.Object{secret("creds", optedIn), secret("tls", nil)}, s3("creds", "tls"), []string{"tls"}},
		{"both without the label", []client.Object{secret("creds", nil), secret("tls", nil)}, s3("creds", "tls"), []string{"creds", "tls"}},
		{"one Secret for both, named once", []client.Object{secret("creds", nil)}, s3("creds", "creds"), []string{"creds"}},
		{"a Secret of another namespace does not count", []client.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "creds", Labels: optedIn}},
			secret("creds", nil)}, s3("creds", ""), []string{"creds"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reads []client.Object
			api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(tc.secrets...).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					reads = append(reads, obj)
					return c.Get(ctx, key, obj, opts...)
				}}).Build()
			err := storageOptedIn(context.Background(), api, "team", tc.storage, storagesecrets.ClusterEndpoints{})
			refused, ok := asSecretsNotOptedIn(err)
			switch {
			case tc.refused == nil && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.refused != nil && !ok:
				t.Fatalf("err = %v, want a refusal of %v", err, tc.refused)
			case ok && !slices.Equal(refused.secrets, tc.refused):
				t.Errorf("refused %v, want %v", refused.secrets, tc.refused)
			}
			claims := 0
			if tc.storage.PersistentVolumeClaim != nil {
				claims = 1
			}
			if len(reads) != len(tc.storage.SecretNames())+claims {
				t.Errorf("%d reads for the Secrets %v", len(reads), tc.storage.SecretNames())
			}
			for _, obj := range reads {
				if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
					t.Errorf("read a %T: only a Secret's metadata may be read", obj)
				}
			}
		})
	}
}

// TestStorageSecretsMissingWait: a Secret that does not exist is no
// refusal (nothing failed for good) but holds the Job back, naming it.
func TestStorageSecretsMissingWait(t *testing.T) {
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds", Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}}}).Build()
	storage := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "b",
		CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"},
		CABundle:             &echov1alpha1.SecretKeyRef{Name: "not-yet", Key: "ca.crt"}}}
	err := storageOptedIn(context.Background(), api, "team", storage, storagesecrets.ClusterEndpoints{})
	missing, ok := asSecretsNotFound(err)
	if !ok || !slices.Equal(missing.secrets, []string{"not-yet"}) {
		t.Fatalf("err = %v, want a wait for Secret not-yet", err)
	}
	if _, refused := asOptInRefusal(err); refused {
		t.Errorf("a missing Secret is taken for a refusal: the work would fail for good")
	}
	if want := `Secret "not-yet" does not exist in namespace team: create it, labelled as storage credentials (kubectl label secret -n team not-yet echo.dev/storage-credentials=true)`; !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not say %q", err, want)
	}
}

// TestStorageOptInRefusals: what a storage names that opted in to be
// there, or to go where it goes, is refused with what to fix.
func TestStorageOptInRefusals(t *testing.T) {
	optedInSecret := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	optedInSA := map[string]string{echov1alpha1.StorageIdentityLabel: "true"}
	endpoints := func(list string) map[string]string {
		return map[string]string{echov1alpha1.StorageEndpointsAnnotation: list}
	}
	objects := []client.Object{
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "db-data"}},
		&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "backups", Labels: map[string]string{echov1alpha1.BackupStorageClaimLabel: "true"}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds", Labels: optedInSecret}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "key-for-aws", Labels: optedInSecret, Annotations: endpoints("https://s3.eu-west-1.amazonaws.com")}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "unlisted", Labels: optedInSA}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3-only", Labels: optedInSA, Annotations: endpoints("https://s3.eu-west-1.amazonaws.com")}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "aws", Labels: optedInSA,
			Annotations: endpoints("https://s3.eu-west-1.amazonaws.com,https://sts.amazonaws.com")}},
	}
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objects...).Build()
	claim := func(name string) echov1alpha1.BackupStorage {
		return echov1alpha1.BackupStorage{PersistentVolumeClaim: &echov1alpha1.PVCStorage{ClaimName: name}}
	}
	sseC := func(endpoint string) echov1alpha1.BackupStorage {
		return echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Endpoint: endpoint, Bucket: "b",
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"},
			Encryption:           &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC, CustomerKey: &echov1alpha1.SecretKeyRef{Name: "key-for-aws", Key: "key"}}}}
	}
	identity := func(sa, endpoint, sts string) echov1alpha1.BackupStorage {
		return echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Endpoint: endpoint, Bucket: "b",
			Identity: &echov1alpha1.S3Identity{ServiceAccountName: sa, STSEndpoint: sts}}}
	}
	for _, tc := range []struct {
		name    string
		storage echov1alpha1.BackupStorage
		reason  string // empty: allowed
		says    string
	}{
		{"another workload's claim", claim("db-data"), echov1alpha1.ReasonClaimNotOptedIn, "kubectl label pvc -n team db-data echo.dev/backup-storage=true"},
		{"a claim that does not exist", claim("nothing"), echov1alpha1.ReasonClaimNotOptedIn, `PersistentVolumeClaim "nothing" of storage.persistentVolumeClaim does not exist`},
		{"an opted-in claim", claim("backups"), "", ""},
		{"an SSE-C key for an endpoint it does not list", sseC("https://s3.attacker.test"), echov1alpha1.ReasonEndpointNotAllowed,
			`the Secret "key-for-aws" does not allow its SSE-C key to be sent to https://s3.attacker.test`},
		{"an SSE-C key for the endpoint it lists", sseC("https://s3.eu-west-1.amazonaws.com"), "", ""},
		{"a token of a ServiceAccount that lists no endpoint", identity("unlisted", "https://s3.eu-west-1.amazonaws.com", "https://sts.amazonaws.com"),
			echov1alpha1.ReasonEndpointNotAllowed, `the ServiceAccount "unlisted" does not allow its token to be sent to https://sts.amazonaws.com`},
		{"a token for an STS the ServiceAccount does not list", identity("aws", "https://s3.eu-west-1.amazonaws.com", "https://sts.attacker.test"),
			echov1alpha1.ReasonEndpointNotAllowed, "kubectl annotate serviceaccount -n team aws --overwrite echo.dev/storage-endpoints="},
		{"a token for the storage's own STS, the one endpoint listed", identity("s3-only", "https://s3.eu-west-1.amazonaws.com", ""),
			"", ""},
		{"credentials bought for a storage the ServiceAccount does not list", identity("aws", "https://s3.attacker.test", "https://sts.amazonaws.com"),
			echov1alpha1.ReasonEndpointNotAllowed, "to be sent to https://s3.attacker.test"},
		{"a token for an STS over http", identity("aws", "https://s3.eu-west-1.amazonaws.com", "http://sts.amazonaws.com"),
			echov1alpha1.ReasonEndpointNotAllowed, "over plain http"},
		{"a token for the storage's STS over http", identity("aws", "http://s3.eu-west-1.amazonaws.com", ""),
			echov1alpha1.ReasonEndpointNotAllowed, "over plain http"},
		{"a token and credentials where the ServiceAccount allows", identity("aws", "https://s3.eu-west-1.amazonaws.com", "https://sts.amazonaws.com"), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := storageOptedIn(context.Background(), api, "team", tc.storage, storagesecrets.ClusterEndpoints{})
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			refused, ok := asOptInRefusal(err)
			if !ok {
				t.Fatalf("err = %v, want a refusal %s", err, tc.reason)
			}
			if refused.reason() != tc.reason || !strings.Contains(refused.message("back up again", ""), tc.says) {
				t.Errorf("refused %s: %q, want %s saying %q", refused.reason(), refused.message("back up again", ""), tc.reason, tc.says)
			}
		})
	}
}

// TestStorageOptInClusterEndpoints: the endpoints the operator's
// administrator allows need no annotation; any other is refused with
// both ways to allow it.
func TestStorageOptInClusterEndpoints(t *testing.T) {
	cluster, err := storagesecrets.ParseClusterEndpoints("https://s3.shared.test, https://sts.shared.test")
	if err != nil {
		t.Fatal(err)
	}
	optedInSecret := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "creds", Labels: optedInSecret}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "key", Labels: optedInSecret}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "backup", Labels: map[string]string{echov1alpha1.StorageIdentityLabel: "true"},
			Annotations: map[string]string{echov1alpha1.StorageEndpointsAnnotation: "https://s3.team.test"}}},
	).Build()
	sseC := func(endpoint string) echov1alpha1.BackupStorage {
		return echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Endpoint: endpoint, Bucket: "b",
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"},
			Encryption:           &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC, CustomerKey: &echov1alpha1.SecretKeyRef{Name: "key", Key: "key"}}}}
	}
	identity := func(endpoint, sts string) echov1alpha1.BackupStorage {
		return echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Endpoint: endpoint, Bucket: "b",
			Identity: &echov1alpha1.S3Identity{ServiceAccountName: "backup", STSEndpoint: sts}}}
	}
	for name, storage := range map[string]echov1alpha1.BackupStorage{
		"an SSE-C key with no annotation, for the administrator's endpoint":    sseC("https://s3.shared.test:443"),
		"a token for the administrator's STS and storage":                      identity("https://s3.shared.test", "https://sts.shared.test"),
		"a token for the administrator's STS and the ServiceAccount's storage": identity("https://s3.team.test", "https://sts.shared.test"),
	} {
		if err := storageOptedIn(context.Background(), api, "team", storage, cluster); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
	for name, storage := range map[string]echov1alpha1.BackupStorage{
		"an SSE-C key for an endpoint nobody lists":     sseC("https://s3.attacker.test"),
		"credentials bought for a storage nobody lists": identity("https://s3.attacker.test", "https://sts.shared.test"),
	} {
		refused, ok := asOptInRefusal(storageOptedIn(context.Background(), api, "team", storage, cluster))
		if !ok || refused.reason() != echov1alpha1.ReasonEndpointNotAllowed {
			t.Fatalf("%s: %v, want a refusal %s", name, refused, echov1alpha1.ReasonEndpointNotAllowed)
		}
		for _, says := range []string{"kubectl annotate", "adds it to STORAGE_ENDPOINTS (--storage-endpoints) on the operator's Deployment"} {
			if msg := refused.message("", ""); !strings.Contains(msg, says) {
				t.Errorf("%s: %q does not say %q", name, msg, says)
			}
		}
	}
}

func TestStorageSecretsOptedInReportsAPIErrors(t *testing.T) {
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, "creds", errors.New("no"))
		}}).Build()
	storage := echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds"}}}
	err := storageOptedIn(context.Background(), api, "team", storage, storagesecrets.ClusterEndpoints{})
	if _, refused := asSecretsNotOptedIn(err); refused || !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want the API server's Forbidden, retried rather than a refusal", err)
	}
}

func TestSecretsNotOptedInSaysWhatToFix(t *testing.T) {
	one := (&secretsNotOptedIn{namespace: "team", secrets: []string{"db-credentials"}}).message("back up again", "")
	for _, want := range []string{
		`Secret "db-credentials" has no label echo.dev/storage-credentials=true`,
		"if it holds this storage's credentials or CA bundle, label it (kubectl label secret -n team db-credentials echo.dev/storage-credentials=true, then back up again)",
		"if not, name a Secret that has the label",
	} {
		if !strings.Contains(one, want) {
			t.Errorf("message %q lacks %q", one, want)
		}
	}
	deletion := (&secretsNotOptedIn{namespace: "team", secrets: []string{"creds"}}).message("", "remove the finalizer")
	if !strings.HasSuffix(deletion, "; if not, remove the finalizer") {
		t.Errorf("message %q does not end with what to do otherwise", deletion)
	}
	two := (&secretsNotOptedIn{namespace: "team", secrets: []string{"creds", "tls"}}).Error()
	for _, want := range []string{
		`Secrets "creds", "tls" have no label`,
		"if they hold this storage's credentials or CA bundle, label them (kubectl label secret -n team creds tls echo.dev/storage-credentials=true)",
	} {
		if !strings.Contains(two, want) {
			t.Errorf("message %q lacks %q", two, want)
		}
	}
}

// TestMoverJobsReadOnlyTheCheckedSecrets: every data mover Job reads the
// Secrets its storage names and no other, so checking
// BackupStorage.SecretNames before creating it checks every Secret it
// reads.
func TestMoverJobsReadOnlyTheCheckedSecrets(t *testing.T) {
	for name, job := range moverJobsOf(moverSettings{image: "img"}) {
		got, want := podSecrets(job.Spec.Template.Spec), slices.Sorted(slices.Values(testStorage.SecretNames()))
		if !slices.Equal(got, want) {
			t.Errorf("the %s Job reads the Secrets %v, want those the check covers: %v", name, got, want)
		}
	}
}

// testStorage is S3 storage with credentials and a CA bundle.
var testStorage = echov1alpha1.BackupStorage{S3: &echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "b",
	CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "creds", AccessKeyIDKey: "id", SecretAccessKeyKey: "key"},
	CABundle:             &echov1alpha1.SecretKeyRef{Name: "ca", Key: "ca.crt"}}}

// moverJobsOf builds every kind of data mover Job, with m, on testStorage.
func moverJobsOf(m moverSettings) map[string]*batchv1.Job {
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: echov1alpha1.EchoSpec{Persistence: &echov1alpha1.PersistenceSpec{Enabled: true}}}
	b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b1"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: "web", Storage: testStorage}}
	rs := &echov1alpha1.EchoRestore{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r1"}}
	src := restoreSource{storage: testStorage, key: "ns/web/b1", echoName: "web"}
	return map[string]*batchv1.Job{
		"backup":  backupJob(b, echo, b.Spec.Storage, m),
		"delete":  deleteJob(b, b.Spec.Storage, m),
		"inspect": inspectJob(rs, src, m),
		"restore": restoreJob(rs, src, echo, m),
	}
}

// podSecrets lists, once each and sorted, the Secrets a pod reads through
// its environment and volumes.
func podSecrets(pod corev1.PodSpec) []string {
	var names []string
	for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				names = append(names, e.ValueFrom.SecretKeyRef.Name)
			}
		}
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil {
				names = append(names, from.SecretRef.Name)
			}
		}
	}
	for _, v := range pod.Volumes {
		switch {
		case v.Secret != nil:
			names = append(names, v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					names = append(names, s.Secret.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
