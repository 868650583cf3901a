package helmreconciler

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// echoChartDir is the echo chart, from this package.
const echoChartDir = "../../helm-charts/echo"

// renderedRelease is a release of the echo chart as an install stores it,
// rendered from a default Echo.
func renderedRelease(tb testing.TB) *release.Release {
	tb.Helper()
	ch, err := chart.Load(echoChartDir)
	if err != nil {
		tb.Fatal(err)
	}
	kv, err := chartutil.ParseKubeVersion(chart.KubeVersion)
	if err != nil {
		tb.Fatal(err)
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun, inst.ClientOnly, inst.KubeVersion = true, true, kv
	inst.ReleaseName, inst.Namespace = "web", "ns"
	rel, err := inst.Run(ch, translate(tb, echov1alpha1.EchoSpec{}))
	if err != nil {
		tb.Fatal(err)
	}
	rel.Info.Status = release.StatusDeployed
	rel.Labels = map[string]string{"echo.dev/render-fingerprint": "f00"}
	return rel
}

// recordStorages are the operator's storage and Helm's own driver over
// the same Secrets, as the manager builds them.
func recordStorages() (*releaseStorage, *driver.Secrets, *fake.Clientset) {
	cs := fake.NewClientset()
	signed := testSigner.SecretClient(cs.CoreV1().Secrets("ns"), "ns")
	// Queries go to the Secrets client, as before the cache shows a write.
	ours := &releaseStorage{Driver: driver.NewSecrets(signed), secrets: signed, namespace: "ns", pending: func(string) bool { return true }}
	return ours, driver.NewSecrets(signed), cs
}

func TestReleaseRecordWrites(t *testing.T) {
	rel := renderedRelease(t)
	ours, helms, cs := recordStorages()
	key := "sh.helm.release.v1.web.v1"
	if err := ours.Create(key, rel); err != nil {
		t.Fatal(err)
	}
	t.Run("Helm's driver reads the record back", func(t *testing.T) {
		got, err := helms.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if got.Manifest != rel.Manifest || got.Version != 1 || got.Info.Status != release.StatusDeployed ||
			got.Chart.Metadata.Name != chart.Name || len(got.Config) == 0 {
			t.Errorf("read back %s v%d %s, not the release written", got.Name, got.Version, got.Info.Status)
		}
	})
	t.Run("the record has the layout of Helm's driver", func(t *testing.T) {
		expectHelmLayout(t, cs, helms, key, rel)
	})
	t.Run("the record is compressed at BestSpeed", func(t *testing.T) {
		if lvl := gzipLevelHint(t, secret(t, cs, key)); lvl != gzipFastest {
			t.Errorf("gzip header says level hint %d, want %d (BestSpeed)", lvl, gzipFastest)
		}
	})
	t.Run("an update is read back with its new status", func(t *testing.T) {
		rel.Info.Status = release.StatusSuperseded
		if err := ours.Update(key, rel); err != nil {
			t.Fatal(err)
		}
		got, err := helms.Query(chart.ReleaseRecordLabels("web"))
		if err != nil || len(got) != 1 || got[0].Info.Status != release.StatusSuperseded || got[0].Labels["modifiedAt"] == "" {
			t.Fatalf("got %v, %v; want v1 superseded, with modifiedAt", got, err)
		}
	})
	t.Run("a second create of a revision is ErrReleaseExists", func(t *testing.T) {
		if err := ours.Create(key, rel); !errors.Is(err, driver.ErrReleaseExists) {
			t.Fatalf("got %v, want ErrReleaseExists", err)
		}
	})
}

// TestReleaseRecordDeleteIsOneRequest: a record is deleted with one
// DELETE, no GET before it; one that is gone is not found.
func TestReleaseRecordDeleteIsOneRequest(t *testing.T) {
	ours, helms, cs := recordStorages()
	key := "sh.helm.release.v1.web.v1"
	if err := ours.Create(key, renderedRelease(t)); err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()
	if _, err := ours.Delete(key); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range cs.Actions() {
		verbs = append(verbs, a.GetVerb())
	}
	if len(verbs) != 1 || verbs[0] != "delete" {
		t.Errorf("deleting a record sent %v, want one delete", verbs)
	}
	if _, err := helms.Get(key); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("the record is still there: %v", err)
	}
	if _, err := ours.Delete(key); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("deleting a missing record: %v, want ErrReleaseNotFound", err)
	}
}

func sameKeys(a, b []byte) bool { return len(a) > 0 && len(b) > 0 }

func secret(t *testing.T, cs *fake.Clientset, name string) *corev1.Secret {
	t.Helper()
	s, err := cs.CoreV1().Secrets("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// gzipFastest is the XFL byte of a gzip header written at BestSpeed
// (RFC 1952); BestCompression writes 2.
const gzipFastest = 4

// gzipLevelHint is the XFL byte of a record's gzip header.
func gzipLevelHint(t *testing.T, s *corev1.Secret) byte {
	t.Helper()
	zipped, err := base64.StdEncoding.DecodeString(string(s.Data[releasetrust.ReleaseDataKey]))
	if err != nil || len(zipped) < 10 {
		t.Fatalf("record data is not base64 gzip: %v", err)
	}
	return zipped[8]
}

// BenchmarkReleaseRecordEncode encodes a release of the echo chart at each
// gzip level with a reused writer, and as Helm's driver does (a new writer
// at BestCompression for every record): ns/op and the record's size.
func BenchmarkReleaseRecordEncode(b *testing.B) {
	rel := renderedRelease(b)
	levels := []struct {
		name  string
		level int
	}{{"BestCompression", gzip.BestCompression}, {"DefaultCompression", gzip.DefaultCompression}, {"BestSpeed", gzip.BestSpeed}}
	for _, l := range levels {
		b.Run(l.name, func(b *testing.B) {
			w, err := gzip.NewWriterLevel(nil, l.level)
			if err != nil {
				b.Fatal(err)
			}
			var size int
			for b.Loop() {
				out, err := encodeRecordAt(rel, w, func(any) {})
				if err != nil {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size), "record-bytes")
		})
	}
	b.Run("HelmDriver", func(b *testing.B) {
		for b.Loop() {
			w, _ := gzip.NewWriterLevel(nil, gzip.BestCompression)
			if _, err := encodeRecordAt(rel, w, func(any) {}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// expectHelmLayout compares the record written under key with the one
// Helm's driver writes for the same release.
func expectHelmLayout(t *testing.T, cs *fake.Clientset, helms *driver.Secrets, key string, rel *release.Release) {
	t.Helper()
	mine := secret(t, cs, key)
	if err := helms.Create("theirs", rel); err != nil {
		t.Fatal(err)
	}
	theirs := secret(t, cs, "theirs")
	if err := cs.CoreV1().Secrets("ns").Delete(context.Background(), "theirs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if mine.Labels[createdAtLabel] == "" || theirs.Labels[createdAtLabel] == "" {
		t.Errorf("labels %v and %v, want createdAt on both", mine.Labels, theirs.Labels)
	}
	delete(mine.Labels, createdAtLabel) // the second of the write
	delete(theirs.Labels, createdAtLabel)
	if mine.Type != theirs.Type || !maps.Equal(mine.Labels, theirs.Labels) || !maps.EqualFunc(mine.Data, theirs.Data, sameKeys) ||
		!testSigner.Verify(mine) {
		t.Errorf("written %s %v %d data keys; Helm writes %s %v %d", mine.Type, mine.Labels, len(mine.Data), theirs.Type, theirs.Labels, len(theirs.Data))
	}
}

// helmActions runs Helm's install and upgrade of the echo chart on a
// storage driver, against a Kubernetes client that applies nothing.
type helmActions struct {
	tb  testing.TB
	cfg *action.Configuration
}

func newHelmActions(tb testing.TB, d driver.Driver) *helmActions {
	tb.Helper()
	kv, err := chartutil.ParseKubeVersion("v1.35.0")
	if err != nil {
		tb.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	return &helmActions{tb: tb, cfg: &action.Configuration{Releases: storage.Init(d),
		KubeClient: &kubefake.PrintingKubeClient{Out: io.Discard}, Capabilities: caps, Log: func(string, ...any) {}}}
}

func (a *helmActions) install(message string) *release.Release {
	a.tb.Helper()
	i := action.NewInstall(a.cfg)
	i.ReleaseName, i.Namespace, i.DisableOpenAPIValidation = "web", "ns", true
	rel, err := i.Run(loadEchoChart(a.tb), translate(a.tb, echov1alpha1.EchoSpec{Message: message}))
	if err != nil {
		a.tb.Fatal(err)
	}
	return rel
}

func (a *helmActions) upgrade(message string) *release.Release {
	a.tb.Helper()
	u := action.NewUpgrade(a.cfg)
	u.Namespace, u.DisableOpenAPIValidation, u.MaxHistory = "ns", true, 3
	rel, err := u.Run("web", loadEchoChart(a.tb), translate(a.tb, echov1alpha1.EchoSpec{Message: message}))
	if err != nil {
		a.tb.Fatal(err)
	}
	return rel
}

// secretWrites are the writes of release records cs received.
func secretWrites(cs *fake.Clientset) []string {
	var out []string
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "secrets" && (a.GetVerb() == "create" || a.GetVerb() == "update") {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

// An install writes its record once, deployed; an upgrade writes the new
// revision once, deployed, and the previous one superseded.
func TestPendingRevisionsAreWrittenOnceFinal(t *testing.T) {
	ours, helms, cs := recordStorages()
	helm := newHelmActions(t, ours)

	helm.install("one")
	if got := secretWrites(cs); !slices.Equal(got, []string{"create"}) {
		t.Errorf("an install wrote %v, want one create", got)
	}
	first, err := helms.Get("sh.helm.release.v1.web.v1")
	if err != nil || first.Info.Status != release.StatusDeployed {
		t.Fatalf("revision 1: %v, %v; want deployed", first, err)
	}

	cs.ClearActions()
	helm.upgrade("two")
	if got := secretWrites(cs); !slices.Equal(got, []string{"update", "create"}) {
		t.Errorf("an upgrade wrote %v, want the previous revision updated and the new one created", got)
	}
	rels, err := helms.Query(chart.ReleaseRecordLabels("web"))
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[int]release.Status{}
	for _, r := range rels {
		statuses[r.Version] = r.Info.Status
	}
	if want := map[int]release.Status{1: release.StatusSuperseded, 2: release.StatusDeployed}; !maps.Equal(statuses, want) {
		t.Errorf("revisions %v, want %v", statuses, want)
	}
}

// Until its final write, a held revision is what reads of its key and
// queries of its release find; deleting it writes nothing.
func TestHeldRevisionIsReadFromTheHeldCopy(t *testing.T) {
	ours, _, cs := recordStorages()
	key := "sh.helm.release.v1.web.v1"
	rel := &release.Release{Name: "web", Namespace: "ns", Version: 1, Info: &release.Info{Status: release.StatusPendingInstall}}
	if err := ours.Create(key, rel); err != nil {
		t.Fatal(err)
	}
	if err := ours.Create(key, rel); !errors.Is(err, driver.ErrReleaseExists) {
		t.Errorf("a second create of a held revision: %v, want ErrReleaseExists", err)
	}
	if got, err := ours.Get(key); err != nil || got != rel {
		t.Errorf("Get = %v, %v; want the held revision", got, err)
	}
	pending, err := ours.Query(withLabel(chart.ReleaseRecordLabels("web"), chart.ReleaseStatusLabel, "pending-install"))
	if err != nil || len(pending) != 1 || pending[0] != rel {
		t.Errorf("Query = %v, %v; want the held revision", pending, err)
	}
	if _, err := ours.Query(withLabel(chart.ReleaseRecordLabels("web"), chart.ReleaseStatusLabel, "deployed")); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("a query of deployed revisions: %v, want not found", err)
	}
	if _, err := ours.Delete(key); err != nil {
		t.Fatal(err)
	}
	if _, err := ours.Get(key); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Errorf("Get after Delete: %v, want not found", err)
	}
	if got := secretWrites(cs); len(got) != 0 {
		t.Errorf("a held revision was written: %v", got)
	}
}

// A held revision whose final write fails stays held, and the install
// that made it reports the error Helm's install only logs.
func TestHeldRevisionWriteFailureIsReported(t *testing.T) {
	ours, _, cs := recordStorages()
	key := "sh.helm.release.v1.web.v1"
	// A record the storage does not know of is in the way.
	if _, err := cs.CoreV1().Secrets("ns").Create(context.Background(),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: "ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rel := &release.Release{Name: "web", Namespace: "ns", Version: 1, Info: &release.Info{Status: release.StatusPendingInstall}}
	if err := ours.Create(key, rel); err != nil {
		t.Fatal(err)
	}
	rel.Info.Status = release.StatusDeployed
	writeErr := ours.Update(key, rel)
	if writeErr == nil {
		t.Fatal("the final write over a foreign record succeeded")
	}
	cfg := &action.Configuration{Releases: storage.Init(ours)}
	if err := heldWriteError(fakeConfig{cfg}, rel); err == nil || !strings.Contains(err.Error(), writeErr.Error()) {
		t.Errorf("heldWriteError = %v, want %v", err, writeErr)
	}
	if err := heldWriteError(fakeConfig{cfg}, &release.Release{Name: "web", Version: 2}); err != nil {
		t.Errorf("heldWriteError of a revision never held = %v", err)
	}
}

// fakeConfig is an action client with a configuration.
type fakeConfig struct{ cfg *action.Configuration }

func (f fakeConfig) Config() *action.Configuration { return f.cfg }

// Every record written is expected in the cache, whatever the action
// makes of it: the record of a failed install is written last, right
// before the reconciler retries, and a retry that missed it would take
// the release for one never installed.
func TestRecordWritesAreExpected(t *testing.T) {
	ours, _, _ := recordStorages()
	var written []int
	ours.written = func(name string, version int) {
		if name == "web" {
			written = append(written, version)
		}
	}
	rel := &release.Release{Name: "web", Namespace: "ns", Version: 1, Info: &release.Info{Status: release.StatusPendingInstall}}
	if err := ours.Create("sh.helm.release.v1.web.v1", rel); err != nil {
		t.Fatal(err)
	}
	if len(written) != 0 {
		t.Errorf("a held revision was expected: %v", written)
	}
	rel.Info.Status = release.StatusFailed
	if err := ours.Update("sh.helm.release.v1.web.v1", rel); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(written, []int{1}) {
		t.Errorf("expected %v, want revision 1 once written", written)
	}
}

// TestHoldRefusesAnUntrustedRecordInTheWay: a pending revision whose key
// the cache shows held by a record the operator did not write is refused
// when Helm creates it, before anything of it is applied; a genuine
// record, or one under another key, is left to the final write.
func TestHoldRefusesAnUntrustedRecordInTheWay(t *testing.T) {
	tampered := func(version int) *corev1.Secret {
		// Signed, then changed, then cached: the cache's verdict is taken
		// on the Secret as changed.
		s := cachedRecord("web", version, release.StatusDeployed)
		s.Data = nil
		testSigner.Sign(s)
		s.Labels["tampered"] = "true"
		out, _ := releaserecords.CacheTransform(testSigner)(s)
		return out.(*corev1.Secret)
	}
	for _, tc := range []struct {
		name    string
		cached  []*corev1.Secret
		refused bool
	}{
		{name: "nothing in the way"},
		{name: "an untrusted record in the way", cached: []*corev1.Secret{tampered(2)}, refused: true},
		{name: "an untrusted record of another revision", cached: []*corev1.Secret{tampered(1)}},
		{name: "a genuine record in the way", cached: []*corev1.Secret{cachedRecord("web", 2, release.StatusDeployed)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := releaseSecretsCache(t)
			for _, s := range tc.cached {
				b = b.WithObjects(s)
			}
			s := &releaseStorage{Driver: driver.NewMemory(), cache: b.Build(), namespace: "ns", pending: func(string) bool { return false }}
			rel := &release.Release{Name: "web", Namespace: "ns", Version: 2, Info: &release.Info{Status: release.StatusPendingUpgrade}}
			err := s.Create("sh.helm.release.v1.web.v2", rel)
			var untrusted *releasetrust.UntrustedRecordError
			if got := errors.As(err, &untrusted); got != tc.refused {
				t.Fatalf("Create: %v; want refused %v", err, tc.refused)
			}
			if _, held := s.heldRevision("sh.helm.release.v1.web.v2"); held == tc.refused {
				t.Errorf("held = %v, want %v", held, !tc.refused)
			}
		})
	}
}
