package releaserecords

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// encodeRelease stores a release as Helm's Secrets driver does.
func encodeRelease(t *testing.T, rel *release.Release) []byte {
	t.Helper()
	raw, err := json.Marshal(rel)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return []byte(base64.StdEncoding.EncodeToString(buf.Bytes()))
}

// testSigner signs the release Secrets of the tests.
var testSigner = func() *releasetrust.Signer {
	s, err := releasetrust.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return s
}()

// transformReleaseSecret is the cache transform with the tests' key.
var transformReleaseSecret = CacheTransform(testSigner)

// releaseSecret is a release Secret as the operator writes it, signed.
func releaseSecret(t *testing.T, name string, version int, status release.Status, owner types.UID) *corev1.Secret {
	t.Helper()
	s := unsignedReleaseSecret(t, name, version, status, owner)
	testSigner.Sign(s)
	return s
}

// unsignedReleaseSecret is a release Secret the operator did not write.
func unsignedReleaseSecret(t *testing.T, name string, version int, status release.Status, owner types.UID) *corev1.Secret {
	t.Helper()
	rel := &release.Release{
		Name: name, Namespace: "ns", Version: version,
		Manifest: "kind: Service\nmetadata:\n  name: " + name + "\n",
		Info: &release.Info{Status: status, Notes: "notes of " + name, Description: "Upgrade complete",
			FirstDeployed: helmtime.Unix(1000, 0), LastDeployed: helmtime.Unix(int64(1000+version), 0)},
		Chart:  &helmchart.Chart{Metadata: &helmchart.Metadata{Name: "echo", Version: "0.1.0", AppVersion: "1.2.3"}},
		Config: map[string]any{"big": "values the cache does not keep"},
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "sh.helm.release.v1." + name + ".v" + strconv.Itoa(version), Namespace: "ns",
			Labels: map[string]string{
				chart.ReleaseOwnerLabel: chart.ReleaseOwner, chart.ReleaseNameLabel: name,
				chart.ReleaseStatusLabel: string(status), chart.ReleaseVersionLabel: strconv.Itoa(version),
				FingerprintLabel: "fp" + strconv.Itoa(version),
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "echo.dev/v1alpha1", Kind: "Echo", Name: name, UID: owner}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "helm"}},
		},
		Type: chart.ReleaseSecretType,
		Data: map[string][]byte{releasetrust.ReleaseDataKey: encodeRelease(t, rel)},
	}
}

func TestCacheTransform(t *testing.T) {
	tests := []struct {
		name     string
		status   release.Status
		wantData map[string]string
	}{
		{"deployed keeps the manifest and notes", release.StatusDeployed,
			map[string]string{"manifest": "kind: Service\nmetadata:\n  name: web\n", "notes": "notes of web"}},
		{"superseded keeps nothing", release.StatusSuperseded, nil},
		{"failed keeps nothing", release.StatusFailed, nil},
		{"pending keeps nothing", release.StatusPendingUpgrade, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := transformReleaseSecret(releaseSecret(t, "web", 1, tt.status, "uid"))
			if err != nil {
				t.Fatal(err)
			}
			// Informers may transform an object more than once.
			again, err := transformReleaseSecret(out)
			if err != nil {
				t.Fatal(err)
			}
			s := again.(*corev1.Secret)
			if !releasetrust.CachedVerified(s) {
				t.Error("a signed release Secret is cached as unverified")
			}
			if got := cachedData(s); len(tt.wantData) == 0 && len(got) != 0 || len(tt.wantData) != 0 && !equalMaps(got, tt.wantData) {
				t.Errorf("data = %q, want %q", got, tt.wantData)
			}
			if s.ManagedFields != nil {
				t.Error("managed fields are kept")
			}
			if s.Labels[FingerprintLabel] != "fp1" || len(s.OwnerReferences) != 1 {
				t.Error("the metadata is not kept")
			}
		})
	}

	t.Run("other Secrets are left alone", func(t *testing.T) {
		in := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"key": []byte("v")}}
		out, _ := transformReleaseSecret(in)
		if string(out.(*corev1.Secret).Data["key"]) != "v" {
			t.Error("a Secret that is not a release was changed")
		}
	})
	t.Run("an undecodable release keeps no data", func(t *testing.T) {
		in := unsignedReleaseSecret(t, "web", 1, release.StatusDeployed, "uid")
		in.Data[releasetrust.ReleaseDataKey] = []byte("not base64!")
		testSigner.Sign(in)
		out, err := transformReleaseSecret(in)
		if err != nil || len(cachedData(out.(*corev1.Secret))) != 0 {
			t.Errorf("got %v, %v; want no data and no error", out.(*corev1.Secret).Data, err)
		}
	})
	for name, in := range map[string]*corev1.Secret{
		"an unsigned record":               unsignedReleaseSecret(t, "web", 1, release.StatusDeployed, "uid"),
		"a record signed with another key": signedWith(t, []byte("another key, another key, another"), unsignedReleaseSecret(t, "web", 1, release.StatusDeployed, "uid")),
		"a record changed after signing": func() *corev1.Secret {
			s := releaseSecret(t, "web", 1, release.StatusDeployed, "uid")
			s.Data[releasetrust.ReleaseDataKey] = unsignedReleaseSecret(t, "web", 2, release.StatusDeployed, "uid").Data[releasetrust.ReleaseDataKey]
			return s
		}(),
		"a record relabelled to another release": func() *corev1.Secret {
			s := releaseSecret(t, "web", 1, release.StatusDeployed, "uid")
			s.Labels[chart.ReleaseNameLabel] = "api"
			return s
		}(),
		"a record copied into another namespace": func() *corev1.Secret {
			s := releaseSecret(t, "web", 1, release.StatusDeployed, "uid")
			s.Namespace = "other"
			return s
		}(),
	} {
		t.Run(name+" is cached unverified and without data", func(t *testing.T) {
			in.Data["padding"] = make([]byte, 1<<20)
			in.Annotations = map[string]string{"padding": strings.Repeat("a", 200<<10)}
			in.Labels["team.example.com/padding"] = strings.Repeat("b", 63)
			out, err := transformReleaseSecret(in)
			if err != nil {
				t.Fatal(err)
			}
			expectUntrustedCopy(t, out.(*corev1.Secret))
		})
	}
}

// expectUntrustedCopy checks the cache's copy of a release Secret that did
// not verify: no data but the verdict, no annotations, and Helm's record
// labels alone.
func expectUntrustedCopy(t *testing.T, s *corev1.Secret) {
	t.Helper()
	if releasetrust.CachedVerified(s) || len(cachedData(s)) != 0 {
		t.Errorf("verified = %v, data = %q; want unverified and no data", releasetrust.CachedVerified(s), cachedData(s))
	}
	if len(s.Annotations) != 0 || s.Labels["team.example.com/padding"] != "" || s.Labels[chart.ReleaseNameLabel] == "" {
		t.Errorf("annotations = %d, labels = %v; want none, and Helm's record labels only", len(s.Annotations), s.Labels)
	}
}

// cachedData is the data of a cached copy but for the verdict and the
// summary (see TestCachedRevision).
func cachedData(s *corev1.Secret) map[string]string {
	got := map[string]string{}
	for k, v := range s.Data {
		if k != "echo.dev/verified" && k != cachedSummaryKey {
			got[k] = string(v)
		}
	}
	return got
}

func signedWith(t *testing.T, key []byte, s *corev1.Secret) *corev1.Secret {
	t.Helper()
	signer, err := releasetrust.NewSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	signer.Sign(s)
	return s
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestCachedLatest(t *testing.T) {
	const owner, other = types.UID("echo-uid"), types.UID("old-uid")
	tests := []struct {
		name        string
		secrets     []*corev1.Secret
		wantOK      bool
		wantVersion int
		wantStatus  release.Status
	}{
		{name: "no release", wantOK: false},
		{
			name: "the highest version wins, whatever the list order",
			secrets: []*corev1.Secret{
				releaseSecret(t, "web", 2, release.StatusDeployed, owner),
				releaseSecret(t, "web", 1, release.StatusSuperseded, owner),
			},
			wantOK: true, wantVersion: 2, wantStatus: release.StatusDeployed,
		},
		{
			name: "a pending latest revision is reported as such",
			secrets: []*corev1.Secret{
				releaseSecret(t, "web", 1, release.StatusDeployed, owner),
				releaseSecret(t, "web", 2, release.StatusPendingUpgrade, owner),
			},
			wantOK: true, wantVersion: 2, wantStatus: release.StatusPendingUpgrade,
		},
		{
			name: "a latest revision of another owner is not trusted",
			secrets: []*corev1.Secret{
				releaseSecret(t, "web", 1, release.StatusDeployed, owner),
				releaseSecret(t, "web", 2, release.StatusDeployed, other),
			},
			wantOK: false,
		},
		{
			name: "a later revision the operator did not write is passed over",
			secrets: []*corev1.Secret{
				releaseSecret(t, "web", 1, release.StatusSuperseded, owner),
				releaseSecret(t, "web", 2, release.StatusDeployed, owner),
				unsignedReleaseSecret(t, "web", 9, release.StatusDeployed, owner),
			},
			wantOK: true, wantVersion: 2, wantStatus: release.StatusDeployed,
		},
		{
			name:    "releases of other names are not mixed in",
			secrets: []*corev1.Secret{releaseSecret(t, "web", 1, release.StatusDeployed, owner), releaseSecret(t, "api", 3, release.StatusDeployed, owner)},
			wantOK:  true, wantVersion: 1, wantStatus: release.StatusDeployed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, hasManifest, err := CachedLatest(context.Background(), cachedSecrets(t, tt.secrets), "ns", "web", owner)
			if err != nil {
				t.Fatal(err)
			}
			if (got != nil) != tt.wantOK {
				t.Fatalf("got %+v, want a revision: %v", got, tt.wantOK)
			}
			if got == nil {
				return
			}
			if got.Version != tt.wantVersion || got.Info.Status != tt.wantStatus {
				t.Errorf("got version %d %s, want %d %s", got.Version, got.Info.Status, tt.wantVersion, tt.wantStatus)
			}
			if got.Name != "web" || got.Namespace != "ns" || got.Labels[FingerprintLabel] != "fp"+strconv.Itoa(tt.wantVersion) {
				t.Errorf("got %s/%s labelled %v, want ns/web and its fingerprint", got.Namespace, got.Name, got.Labels)
			}
			if tt.wantStatus == release.StatusDeployed && (!hasManifest || got.Info.Notes != "notes of web") {
				t.Errorf("the deployed revision lost its manifest or notes: %+v", got)
			}
		})
	}
}

func TestDeployedIn(t *testing.T) {
	const owner, other = types.UID("echo-uid"), types.UID("old-uid")
	tests := []struct {
		name        string
		secrets     []*corev1.Secret
		wantVersion int // 0: none
	}{
		{name: "no release"},
		{
			name: "the deployed revision, not the newer failed one",
			secrets: []*corev1.Secret{
				releaseSecret(t, "web", 1, release.StatusSuperseded, owner),
				releaseSecret(t, "web", 2, release.StatusDeployed, owner),
				releaseSecret(t, "web", 3, release.StatusFailed, owner),
			},
			wantVersion: 2,
		},
		{
			name:    "a failed install has none",
			secrets: []*corev1.Secret{releaseSecret(t, "web", 1, release.StatusFailed, owner)},
		},
		{
			name:    "a deployed revision of another owner is not this Echo's",
			secrets: []*corev1.Secret{releaseSecret(t, "web", 4, release.StatusDeployed, other)},
		},
		{
			name: "a revision the operator did not write is passed over",
			secrets: []*corev1.Secret{
				releaseSecret(t, "web", 1, release.StatusDeployed, owner),
				unsignedReleaseSecret(t, "web", 9, release.StatusDeployed, owner),
			},
			wantVersion: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			records, err := CachedRecords(context.Background(), cachedSecrets(t, tt.secrets), "ns", "web")
			if err != nil {
				t.Fatal(err)
			}
			got := DeployedIn(records, owner)
			if tt.wantVersion == 0 {
				if got != nil {
					t.Fatalf("got revision %d, want none", got.Version)
				}
				return
			}
			if got == nil || got.Version != tt.wantVersion || got.Info.Status != release.StatusDeployed || got.Info.Notes != "notes of web" {
				t.Fatalf("got %+v, want deployed revision %d with its notes", got, tt.wantVersion)
			}
		})
	}
}

// cachedSecrets is a client reading the cache's copies of release Secrets.
func cachedSecrets(t *testing.T, secrets []*corev1.Secret) client.Reader {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, s := range secrets {
		out, _ := transformReleaseSecret(s)
		b = b.WithObjects(out.(client.Object))
	}
	return b.WithIndex(&corev1.Secret{}, releaseNameIndex, releaseNameOf).Build()
}

func TestCachedRevision(t *testing.T) {
	for _, status := range []release.Status{release.StatusDeployed, release.StatusSuperseded, release.StatusFailed} {
		t.Run(string(status)+" keeps its summary", func(t *testing.T) {
			out, err := transformReleaseSecret(releaseSecret(t, "web", 2, status, "uid"))
			if err != nil {
				t.Fatal(err)
			}
			got, ok := cachedRevision(out.(*corev1.Secret))
			want := Revision{
				Namespace: "ns", Release: "web", Version: 2, Status: status, Record: "sh.helm.release.v1.web.v2",
				Summary: RevisionSummary{
					Chart: "echo", ChartVersion: "0.1.0", AppVersion: "1.2.3", Description: "Upgrade complete",
					FirstDeployed: time.Unix(1000, 0), LastDeployed: time.Unix(1002, 0),
				},
			}
			if !ok || !got.Summary.FirstDeployed.Equal(want.Summary.FirstDeployed) || !got.Summary.LastDeployed.Equal(want.Summary.LastDeployed) {
				t.Fatalf("cachedRevision = %+v, %v; want %+v", got, ok, want)
			}
			got.Summary.FirstDeployed, got.Summary.LastDeployed = want.Summary.FirstDeployed, want.Summary.LastDeployed
			if got != want {
				t.Errorf("cachedRevision = %+v; want %+v", got, want)
			}
		})
	}
	t.Run("an unverified record is not a revision", func(t *testing.T) {
		out, err := transformReleaseSecret(unsignedReleaseSecret(t, "web", 1, release.StatusDeployed, "uid"))
		if err != nil {
			t.Fatal(err)
		}
		if r, ok := cachedRevision(out.(*corev1.Secret)); ok {
			t.Errorf("cachedRevision = %+v, true; want none", r)
		}
	})
}
