package liveapi

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/egress"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// endpoint is an S3 endpoint that answers every request with an empty
// bucket listing and keeps the Authorization headers it was sent.
type endpoint struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newEndpoint(t *testing.T) *endpoint {
	e := &endpoint{}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

// serve answers an empty listing and keeps the Authorization header.
func (e *endpoint) serve(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.auths = append(e.auths, r.Header.Get("Authorization"))
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/xml")
	_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>` +
		`<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>backups</Name><KeyCount>0</KeyCount>` +
		`<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`))
}

// tlsEndpoint is an endpoint over TLS, as an SSE-C key needs, with the
// PEM of its certificate.
type tlsEndpoint struct {
	*endpoint
	caPEM []byte
}

func newTLSEndpoint(t *testing.T) *tlsEndpoint {
	e := &endpoint{}
	e.Server = httptest.NewUnstartedServer(http.HandlerFunc(e.serve))
	e.StartTLS()
	t.Cleanup(e.Close)
	cert := e.Certificate()
	return &tlsEndpoint{endpoint: e, caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}
}

func (e *endpoint) requests() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.auths...)
}

// TestListingNeedsOptedInSecrets: a location whose credentials or CA
// Secret lacks the label is refused before anything is sent to its
// endpoint; one whose Secrets carry it is listed.
func TestListingNeedsOptedInSecrets(t *testing.T) {
	optedIn := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	secret := func(name string, labels map[string]string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: labels}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	dbPassword := secret("db-credentials", map[string]string{"app": "db"}, map[string]string{"password": "hunter2"})
	s3Keys := secret("s3-credentials", optedIn, map[string]string{"AWS_ACCESS_KEY_ID": "backup-key", "AWS_SECRET_ACCESS_KEY": "backup-secret"})
	unlabelledCA := secret("tls", nil, map[string]string{"ca.crt": "not read"})

	cases := []struct {
		name      string
		creds     *echov1alpha1.S3CredentialsSecretRef
		ca        *echov1alpha1.SecretKeyRef
		wantError string // empty: listed
	}{
		{"credentials without the label", &echov1alpha1.S3CredentialsSecretRef{Name: "db-credentials", AccessKeyIDKey: "password", SecretAccessKeyKey: "password"}, nil,
			`the Secret "db-credentials" has no label echo.dev/storage-credentials=true`},
		{"a CA bundle without the label", &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY"},
			&echov1alpha1.SecretKeyRef{Name: "tls", Key: "ca.crt"}, `the Secret "tls" has no label echo.dev/storage-credentials=true`},
		{"credentials that do not exist", &echov1alpha1.S3CredentialsSecretRef{Name: "nothing", AccessKeyIDKey: "id", SecretAccessKeyKey: "key"}, nil,
			"reading the credentials Secret nothing"},
		{"opted-in credentials", &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY"}, nil, ""},
		// As a mover Job reads them: the API server defaults the key names,
		// a location built otherwise is read alike.
		{"opted-in credentials under the default key names", &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials"}, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			server := newEndpoint(t)
			api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(dbPassword, s3Keys, unlabelledCA).Build()
			loc := &echov1alpha1.EchoBackupLocation{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "offsite", ResourceVersion: "1"},
				Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{
					Endpoint: server.URL, Bucket: "backups", Region: "us-east-1", ForcePathStyle: true,
					CredentialsSecretRef: tc.creds, CABundle: tc.ca,
				}},
			}
			_, err := newLocationListings(api, allowLoopback(), storagesecrets.ClusterEndpoints{}, defaultListingLimits).list(context.Background(), loc)

			if tc.wantError == "" {
				if err != nil {
					t.Fatalf("listing: %v", err)
				}
				if auths := server.requests(); len(auths) == 0 || !strings.Contains(auths[0], "Credential=backup-key/") {
					t.Errorf("requests to the endpoint signed %q, want the opted-in key", auths)
				}
				return
			}
			if err == nil || !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), tc.wantError) {
				t.Fatalf("listing: %v, want a 503 saying %q", err, tc.wantError)
			}
			if !strings.Contains(err.Error(), "EchoBackupLocation team/offsite") {
				t.Errorf("%v does not name the location", err)
			}
			if auths := server.requests(); len(auths) > 0 {
				t.Errorf("%d requests reached the endpoint, signed %q", len(auths), auths)
			}
		})
	}
	t.Run("the refusal says how to label the Secret", func(t *testing.T) {
		api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(dbPassword).Build()
		loc := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "offsite"},
			Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{Endpoint: "https://s3.example.test", Bucket: "backups",
				CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "db-credentials"}}}}
		_, err := newLocationListings(api, allowLoopback(), storagesecrets.ClusterEndpoints{}, defaultListingLimits).list(context.Background(), loc)
		want := "kubectl label secret -n team db-credentials echo.dev/storage-credentials=true"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v does not say %q", err, want)
		}
	})
}

// TestListingChecksTheSecretItUses: the label is read on the very Secret
// whose data the listing uses. An API server that shows the labelled
// metadata of a Secret but then hands out one without the label (a Secret
// replaced between two reads) gets the listing refused, and nothing is
// sent.
func TestListingChecksTheSecretItUses(t *testing.T) {
	server := newEndpoint(t)
	labelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3-credentials",
		Labels: map[string]string{echov1alpha1.StorageSecretLabel: "true"}}}
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(labelled).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if secret, ok := obj.(*corev1.Secret); ok {
				// The Secret whose data is read is another one by now.
				secret.Labels = nil
				secret.Data = map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("db"), "AWS_SECRET_ACCESS_KEY": []byte("hunter2")}
			}
			return nil
		}}).Build()
	loc := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "offsite", ResourceVersion: "1"},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{Endpoint: server.URL, Bucket: "backups", ForcePathStyle: true,
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials"}}}}
	_, err := newLocationListings(api, allowLoopback(), storagesecrets.ClusterEndpoints{}, defaultListingLimits).list(context.Background(), loc)
	if want := `the Secret "s3-credentials" has no label`; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("listing: %v, want a refusal saying %q", err, want)
	}
	if auths := server.requests(); len(auths) > 0 {
		t.Errorf("%d requests reached the endpoint, signed %q", len(auths), auths)
	}
}

// TestListingSendsAnSSECKeyOnlyWhereAllowed: the SSE-C key goes with every
// request of a listing, so its Secret, or the operator's administrator,
// must list the location's endpoint; a key for another endpoint is
// refused before anything is sent, with both ways to allow it, and one
// that either lists is listed.
func TestListingSendsAnSSECKeyOnlyWhereAllowed(t *testing.T) {
	server := newTLSEndpoint(t)
	optedIn := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3-credentials", Labels: optedIn},
		Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("backup-key"), "AWS_SECRET_ACCESS_KEY": []byte("backup-secret")}}
	key := func(allowed string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "backup-key", Labels: optedIn,
			Annotations: map[string]string{echov1alpha1.StorageEndpointsAnnotation: allowed}},
			Data: map[string][]byte{"key": []byte(strings.Repeat("k", 32))}}
	}
	list := func(key *corev1.Secret, cluster storagesecrets.ClusterEndpoints) error {
		api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(creds, key).Build()
		loc := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "vault", ResourceVersion: "1"},
			Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{Endpoint: server.URL, Bucket: "backups", ForcePathStyle: true,
				CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials"},
				CABundle:             &echov1alpha1.SecretKeyRef{Name: "s3-credentials", Key: "ca.crt"},
				Encryption: &echov1alpha1.S3Encryption{Type: echov1alpha1.EncryptionSSEC,
					CustomerKey: &echov1alpha1.SecretKeyRef{Name: "backup-key", Key: "key"}}}}}
		_, err := newLocationListings(api, allowLoopback(), cluster, defaultListingLimits).list(context.Background(), loc)
		return err
	}
	creds.Data["ca.crt"] = server.caPEM
	elsewhere, err := storagesecrets.ParseClusterEndpoints("https://s3.shared.test")
	if err != nil {
		t.Fatal(err)
	}
	err = list(key("https://s3.eu-west-1.amazonaws.com"), elsewhere)
	for _, want := range []string{"kubectl annotate secret -n team backup-key --overwrite echo.dev/storage-endpoints=https://s3.eu-west-1.amazonaws.com:443," + server.URL,
		"or the operator's administrator adds it to STORAGE_ENDPOINTS"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("listing with a key for another endpoint: %v, want a refusal saying %q", err, want)
		}
	}
	if auths := server.requests(); len(auths) > 0 {
		t.Fatalf("%d requests reached the endpoint the key does not allow", len(auths))
	}
	if err := list(key(server.URL), storagesecrets.ClusterEndpoints{}); err != nil {
		t.Fatalf("listing with a key that allows the endpoint: %v", err)
	}
	if len(server.requests()) == 0 {
		t.Error("the endpoint the key allows was not asked")
	}
	admin, err := storagesecrets.ParseClusterEndpoints("https://s3.shared.test, " + server.URL)
	if err != nil {
		t.Fatal(err)
	}
	asked := len(server.requests())
	if err := list(key(""), admin); err != nil {
		t.Fatalf("listing with a key the administrator allows to the endpoint: %v", err)
	}
	if len(server.requests()) == asked {
		t.Error("the endpoint the administrator allows was not asked")
	}
}

// allowLoopback is an egress policy that lets the listing reach the test's
// server on 127.0.0.1.
func allowLoopback() *egress.Policy {
	return egress.New(egress.Config{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
}

// TestListingNeedsTheCABundleKey: a location whose CA bundle Secret lacks
// the key it names is refused before anything is sent to its endpoint, as
// a mover Job's pod would not start without it.
func TestListingNeedsTheCABundleKey(t *testing.T) {
	server := newEndpoint(t)
	optedIn := map[string]string{echov1alpha1.StorageSecretLabel: "true"}
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3-credentials", Labels: optedIn},
			Data: map[string][]byte{"AWS_ACCESS_KEY_ID": []byte("backup-key"), "AWS_SECRET_ACCESS_KEY": []byte("backup-secret")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s3-ca", Labels: optedIn},
			Data: map[string][]byte{"other.pem": []byte("not the bundle")}},
	).Build()
	loc := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "offsite", ResourceVersion: "1"},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{Endpoint: server.URL, Bucket: "backups", ForcePathStyle: true,
			CredentialsSecretRef: &echov1alpha1.S3CredentialsSecretRef{Name: "s3-credentials", AccessKeyIDKey: "AWS_ACCESS_KEY_ID", SecretAccessKeyKey: "AWS_SECRET_ACCESS_KEY"},
			CABundle:             &echov1alpha1.SecretKeyRef{Name: "s3-ca", Key: "ca.crt"}}}}
	_, err := newLocationListings(api, allowLoopback(), storagesecrets.ClusterEndpoints{}, defaultListingLimits).list(context.Background(), loc)
	if want := "the CA bundle Secret s3-ca has no ca.crt"; err == nil || !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("listing: %v, want a 503 saying %q", err, want)
	}
	if auths := server.requests(); len(auths) > 0 {
		t.Errorf("%d requests reached the endpoint", len(auths))
	}
}

// A location with an identity is not listed, and its endpoint not asked:
// the manager would need a token of the ServiceAccount.
func TestListingRefusesAnIdentity(t *testing.T) {
	server := newEndpoint(t)
	api := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	loc := &echov1alpha1.EchoBackupLocation{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "offsite"},
		Spec: echov1alpha1.EchoBackupLocationSpec{S3: echov1alpha1.S3Storage{Endpoint: server.URL, Bucket: "backups", ForcePathStyle: true,
			Identity: &echov1alpha1.S3Identity{ServiceAccountName: "echo-backup"}}}}
	_, err := newLocationListings(api, allowLoopback(), storagesecrets.ClusterEndpoints{}, defaultListingLimits).list(context.Background(), loc)
	want := "the location authenticates as ServiceAccount echo-backup (storage.s3.identity)"
	if err == nil || !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("listing: %v, want a 503 saying %q", err, want)
	}
	if auths := server.requests(); len(auths) > 0 {
		t.Errorf("%d requests reached the endpoint", len(auths))
	}
}
