package app

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
	"github.com/echo-operator/echo-operator/internal/servingcert"
	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

func TestCacheOptions(t *testing.T) {
	all := cacheOptions(nil, testSigner(t))
	if all.DefaultNamespaces != nil {
		t.Errorf("no namespaces should watch all, got %v", all.DefaultNamespaces)
	}
	if all.DefaultTransform == nil {
		t.Error("managed fields are not stripped")
	}

	some := cacheOptions([]string{"team-a", "team-b"}, testSigner(t))
	if len(some.DefaultNamespaces) != 2 {
		t.Errorf("namespaces = %v, want team-a and team-b", some.DefaultNamespaces)
	}

	selects := func(obj any, set labels.Set) bool {
		for o, by := range all.ByObject {
			if sameType(o, obj) {
				return by.Label.Matches(set)
			}
		}
		t.Fatalf("%T is not scoped", obj)
		return false
	}
	if !selects(&corev1.Secret{}, labels.Set(chart.ReleaseRecordLabels("e"))) || selects(&corev1.Secret{}, labels.Set{"app": "db"}) {
		t.Error("the Secret cache should hold Helm release Secrets only")
	}
	if !selects(&appsv1.Deployment{}, labels.Set{chart.NameLabel: chart.Name}) || selects(&appsv1.Deployment{}, labels.Set{"app": "other"}) {
		t.Error("the Deployment cache should hold what the echo chart renders only")
	}
}

func sameType(a, b any) bool { return reflect.TypeOf(a) == reflect.TypeOf(b) }

func testSigner(t *testing.T) *releasetrust.Signer {
	t.Helper()
	s, err := releasetrust.NewSigner(make([]byte, releasetrust.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestMetricsOptions(t *testing.T) {
	certDir := t.TempDir()
	if _, err := testcerts.Write(certDir, metricsCertName, metricsKeyName); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		o           Options
		wantCertDir string
		wantErr     string
	}{
		{name: "plain HTTP", o: Options{MetricsAddr: ":8080"}},
		{name: "a self-signed certificate", o: Options{MetricsAddr: ":8443", MetricsSecure: true}},
		{name: "the certificate of a directory", o: Options{MetricsAddr: ":8443", MetricsSecure: true, MetricsCertDir: certDir}, wantCertDir: certDir},
		{name: "a certificate for plain HTTP", o: Options{MetricsAddr: ":8080", MetricsCertDir: certDir},
			wantErr: "it needs --metrics-secure"},
		{name: "a directory without the certificate", o: Options{MetricsAddr: ":8443", MetricsSecure: true, MetricsCertDir: t.TempDir()},
			wantErr: "--metrics-cert-dir: the metrics certificate needs tls.crt"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := metricsOptions(tc.o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.SecureServing != tc.o.MetricsSecure || (m.FilterProvider != nil) != tc.o.MetricsSecure {
				t.Errorf("secure serving %v with authorization %v, want both %v", m.SecureServing, m.FilterProvider != nil, tc.o.MetricsSecure)
			}
			if m.CertDir != tc.wantCertDir {
				t.Errorf("CertDir %q, want %q", m.CertDir, tc.wantCertDir)
			}
		})
	}
}

// TestClientReadsAPIServicesFromTheServer: the operator may read the live
// API's APIService by name only; a cached read would start a cluster-wide
// watch its RBAC forbids, which never syncs and keeps the leader unready.
func TestClientReadsAPIServicesFromTheServer(t *testing.T) {
	opts := clientOptions()
	if opts.Cache == nil || !opts.Cache.Unstructured {
		t.Fatal("unstructured reads should be cached: the Helm reconcilers read their objects so")
	}
	for _, obj := range opts.Cache.DisableFor {
		if obj.GetObjectKind().GroupVersionKind() == servingcert.EmptyAPIService().GroupVersionKind() {
			return
		}
	}
	t.Errorf("APIServices are cached: DisableFor = %v", opts.Cache.DisableFor)
}
