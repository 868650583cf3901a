package helmreconciler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// testSigner signs the release Secrets of the tests.
var testSigner = func() *releasetrust.Signer {
	s, err := releasetrust.NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		panic(err)
	}
	return s
}()

// cachedRecord is the cache's copy of a release Secret the operator wrote.
func cachedRecord(name string, version int, status release.Status) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("sh.helm.release.v1.%s.v%d", name, version), Namespace: "ns",
		Labels: map[string]string{chart.ReleaseOwnerLabel: chart.ReleaseOwner, chart.ReleaseNameLabel: name,
			chart.ReleaseStatusLabel: string(status), chart.ReleaseVersionLabel: strconv.Itoa(version)},
	}}
	testSigner.Sign(s)
	out, _ := releaserecords.CacheTransform(testSigner)(s)
	return out.(*corev1.Secret)
}

// builderIndexer registers the cache's indexes on a fake client.
type builderIndexer struct{ *fake.ClientBuilder }

func (b builderIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	b.WithIndex(obj, field, extract)
	return nil
}

// countingDriver counts the label-selected queries that reach the API server.
type countingDriver struct {
	driver.Driver
	queries int
}

func (d *countingDriver) Query(l map[string]string) ([]*release.Release, error) {
	d.queries++
	return d.Driver.Query(l)
}

func TestReleaseStorageQuery(t *testing.T) {
	stored := []*corev1.Secret{
		cachedRecord("web", 1, release.StatusSuperseded),
		cachedRecord("web", 2, release.StatusDeployed),
		cachedRecord("api", 1, release.StatusDeployed),
	}
	// gone is in the cache but was deleted from the API server since.
	gone := cachedRecord("web", 3, release.StatusFailed)

	newStorage := func(t *testing.T, pending bool) (*releaseStorage, *countingDriver) {
		t.Helper()
		b := releaseSecretsCache(t)
		mem := driver.NewMemory()
		for _, s := range append(append([]*corev1.Secret{}, stored...), gone) {
			b = b.WithObjects(s.DeepCopy())
		}
		for _, s := range stored {
			rel := &release.Release{Name: s.Labels[chart.ReleaseNameLabel], Version: mustAtoi(t, s.Labels[chart.ReleaseVersionLabel]),
				Info: &release.Info{Status: release.Status(s.Labels[chart.ReleaseStatusLabel])}}
			if err := mem.Create(s.Name, rel); err != nil {
				t.Fatal(err)
			}
		}
		d := &countingDriver{Driver: mem}
		return &releaseStorage{Driver: d, cache: b.Build(), namespace: "ns",
			pending: func(string) bool { return pending }}, d
	}

	t.Run("revisions are read by name, without a query", func(t *testing.T) {
		s, d := newStorage(t, false)
		rels, err := s.Query(chart.ReleaseRecordLabels("web"))
		if err != nil {
			t.Fatal(err)
		}
		if len(rels) != 2 || rels[0].Version != 1 || rels[1].Version != 2 {
			t.Fatalf("got %d revisions, want v1 and v2 (v3 is gone)", len(rels))
		}
		if rels[1].Labels[chart.ReleaseStatusLabel] != "deployed" || rels[1].Labels[chart.ReleaseVersionLabel] != "2" {
			t.Errorf("labels = %v, want the system labels back", rels[1].Labels)
		}
		if d.queries != 0 {
			t.Errorf("%d queries reached the API server", d.queries)
		}
	})
	t.Run("a status selects", func(t *testing.T) {
		s, _ := newStorage(t, false)
		rels, err := s.Query(withLabel(chart.ReleaseRecordLabels("web"), chart.ReleaseStatusLabel, "deployed"))
		if err != nil || len(rels) != 1 || rels[0].Version != 2 {
			t.Fatalf("got %v, %v; want v2", rels, err)
		}
	})
	t.Run("a release the cache has no revision of is not found", func(t *testing.T) {
		s, d := newStorage(t, false)
		_, err := s.Query(chart.ReleaseRecordLabels("new"))
		if !errors.Is(err, driver.ErrReleaseNotFound) || d.queries != 0 {
			t.Fatalf("got %v with %d queries; want not found and none", err, d.queries)
		}
	})
	t.Run("revisions written and not yet cached go to the API server", func(t *testing.T) {
		s, d := newStorage(t, true)
		if _, err := s.Query(chart.ReleaseRecordLabels("web")); err != nil {
			t.Fatal(err)
		}
		if d.queries != 1 {
			t.Errorf("%d queries, want 1", d.queries)
		}
	})
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// releaseSecretsCache builds a client of Secrets indexed by release name,
// as the manager's cache is.
func releaseSecretsCache(t *testing.T) *fake.ClientBuilder {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	if err := releaserecords.IndexByRelease(context.Background(), builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	return b
}

// cacheOf is a cache holding the release Secrets cs holds, as the
// manager's cache transforms them.
func cacheOf(t *testing.T, cs *k8sfake.Clientset) client.Reader {
	t.Helper()
	b := releaseSecretsCache(t)
	list, err := cs.CoreV1().Secrets("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		s := list.Items[i].DeepCopy()
		s.Namespace = "ns"
		out, err := releaserecords.CacheTransform(testSigner)(s)
		if err != nil {
			t.Fatal(err)
		}
		b = b.WithObjects(out.(*corev1.Secret))
	}
	return b.Build()
}

// secretReads are the names of the Secrets read by name, and the number
// of Secret lists, that cs received.
func secretReads(cs *k8sfake.Clientset) (gets []string, lists int) {
	for _, a := range cs.Actions() {
		if a.GetResource().Resource != "secrets" {
			continue
		}
		switch a.GetVerb() {
		case "get":
			gets = append(gets, a.(k8stesting.GetAction).GetName())
		case "list":
			lists++
		}
	}
	return gets, lists
}

// An upgrade of a release with older revisions kept reads one revision,
// the latest, by name, once: the older ones are summarised from the
// cache's labels, which is all Helm's upgrade and pruning look at, and the
// latest, asked for by Last, the pruning's History and Deployed, is read
// once per storage.
func TestUpgradeReadsOnlyTheLatestRevision(t *testing.T) {
	ours, helms, cs := recordStorages()
	helm := newHelmActions(t, ours)
	helm.install("one")
	helm.upgrade("two")
	helm.upgrade("three") // three revisions kept, the most an upgrade keeps
	ours.cache = cacheOf(t, cs)
	ours.pending = func(string) bool { return false }
	cs.ClearActions()

	rel := helm.upgrade("four")

	gets, lists := secretReads(cs)
	if lists != 0 {
		t.Errorf("the upgrade listed Secrets %d times", lists)
	}
	if len(gets) != 1 {
		t.Errorf("the upgrade read %v, want the latest revision once", gets)
	}
	for _, name := range gets {
		if name != "sh.helm.release.v1.web.v3" {
			t.Errorf("the upgrade read %s; only the latest revision, v3, is needed whole", name)
		}
	}
	if rel.Version != 4 || rel.Info.Status != release.StatusDeployed {
		t.Errorf("upgraded to v%d %s, want v4 deployed", rel.Version, rel.Info.Status)
	}
	kept, err := helms.Query(chart.ReleaseRecordLabels("web"))
	if err != nil || len(kept) != 3 {
		t.Fatalf("kept %d revisions (%v), want 3: the oldest pruned", len(kept), err)
	}
	for _, r := range kept {
		if r.Version == 1 {
			t.Error("revision 1 was not pruned")
		}
	}
}

// History returns every revision whole, the summarised ones read by key.
func TestHistoryReadsSummarisedRevisions(t *testing.T) {
	ours, _, cs := recordStorages()
	helm := newHelmActions(t, ours)
	helm.install("one")
	helm.upgrade("two")
	ours.cache = cacheOf(t, cs)
	ours.pending = func(string) bool { return false }

	queried, err := ours.Query(chart.ReleaseRecordLabels("web"))
	if err != nil || len(queried) != 2 || !isSummary(queried[0]) || isSummary(queried[1]) {
		t.Fatalf("query: %v, %v; want v1 summarised and v2 whole", queried, err)
	}
	if queried[0].Info.Status != release.StatusSuperseded || queried[0].Version != 1 || queried[0].Namespace != "ns" {
		t.Errorf("summary of v1: %+v", queried[0])
	}
	c := &actionClient{helm: fakeHistory{cfg: helm.cfg}}
	rels, err := c.History("web")
	if err != nil || len(rels) != 2 {
		t.Fatalf("history: %v, %v", rels, err)
	}
	for _, r := range rels {
		if isSummary(r) || r.Manifest == "" {
			t.Errorf("revision %d is not whole", r.Version)
		}
	}
}

// fakeHistory is Helm's action client, for History.
type fakeHistory struct {
	helmclient.ActionInterface
	cfg *action.Configuration
}

func (f fakeHistory) Config() *action.Configuration { return f.cfg }

func (f fakeHistory) History(name string, _ ...helmclient.HistoryOption) ([]*release.Release, error) {
	return action.NewHistory(f.cfg).Run(name)
}

// A record is read once per storage; each caller gets its own copy of
// what Helm changes before writing a revision back, and a write is read
// again.
func TestStorageReadsARecordOnce(t *testing.T) {
	ours, _, cs := recordStorages()
	const key = "sh.helm.release.v1.web.v1"
	if err := ours.Create(key, renderedRelease(t)); err != nil {
		t.Fatal(err)
	}
	cs.ClearActions()

	first, err := ours.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	first.Info.Status = release.StatusSuperseded
	first.Labels["changed"] = "yes"
	second, err := ours.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if gets, _ := secretReads(cs); len(gets) != 1 {
		t.Errorf("two Gets read %v, want one read", gets)
	}
	if second.Info.Status != release.StatusDeployed || second.Labels["changed"] != "" {
		t.Errorf("a caller's change reached the next reader: %s %v", second.Info.Status, second.Labels)
	}

	if err := ours.Update(key, first); err != nil {
		t.Fatal(err)
	}
	third, err := ours.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	if third.Info.Status != release.StatusSuperseded {
		t.Errorf("after a write the record reads %s, want what was written", third.Info.Status)
	}
}
