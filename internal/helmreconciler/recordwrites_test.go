package helmreconciler

import (
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
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
