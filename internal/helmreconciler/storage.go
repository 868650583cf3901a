package helmreconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// releaseStorage is the storage driver of the Helm action clients: Helm's
// Secrets driver, whose queries are answered with the cache's help and
// whose records are written at a cheaper gzip level (recordwrites.go).
//
// Helm finds a release's revisions with a label-selected list of Secrets,
// which the API server answers by scanning every Secret of the namespace:
// with thousands of releases, each install and upgrade paid for three of
// them. The cache knows the revisions' names from their labels; the
// revisions a query's caller needs whole (the latest, the deployed ones)
// are then read by name, and the others answered from the cache's labels
// (see queryRecords). A release the cache has no revision of is not found
// without asking. Until the cache shows the revisions this process wrote
// (see expectations), queries go to the API server as before.
//
// One storage serves the Helm actions of one reconcile: it holds the
// revisions they created pending until their final write
// (recordwrites.go).
type releaseStorage struct {
	driver.Driver
	// secrets is the Secrets client Driver writes through.
	secrets   corev1client.SecretInterface
	cache     client.Reader
	namespace string
	// pending reports whether the cache may lack revisions of a release
	// this process wrote.
	pending func(name string) bool
	// written records that this process wrote a revision of a release,
	// whatever the action that wrote it makes of it afterwards.
	written func(name string, version int)

	mu sync.Mutex
	// held are the revisions created pending and not yet written, by key
	// (recordwrites.go).
	held map[string]*heldRecord
	// read are the records this storage read, by key, until it writes or
	// deletes them: an upgrade asks for the latest revision three times
	// (Last, then the pruning's History and Deployed), which is one read
	// and one decode.
	read map[string]*release.Release
}

// storageDriverMapper returns the storage driver of an object's releases:
// Helm's Secrets driver in the object's namespace, whose Secrets are
// controlled by the object, signed when written and hidden when they do
// not verify (see releasetrust).
func (g *actionClientGetter) storageDriverMapper() helmclient.ObjectToStorageDriverMapper {
	return func(ctx context.Context, obj client.Object, cfg *rest.Config) (driver.Driver, error) {
		core, err := corev1client.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("creating the Secrets client of the release storage: %w", err)
		}
		owner := metav1.NewControllerRef(obj, obj.GetObjectKind().GroupVersionKind())
		// The owner reference goes on first, so that it is part of what
		// is written after signing.
		secrets := helmclient.NewOwnerRefSecretClient(g.signer.SecretClient(core.Secrets(obj.GetNamespace()), obj.GetNamespace()),
			[]metav1.OwnerReference{*owner}, helmclient.MatchAllSecrets)
		return &releaseStorage{
			Driver:    driver.NewSecrets(secrets),
			secrets:   secrets,
			cache:     g.cache,
			namespace: obj.GetNamespace(),
			pending: func(name string) bool {
				return g.expected.pending(releaseKey(obj, name))
			},
			written: func(name string, version int) {
				g.expected.expect(releaseKey(obj, name), version)
			},
		}, nil
	}
}

// Get implements driver.Driver: a revision held until its final write
// (recordwrites.go) is answered from the held copy.
func (s *releaseStorage) Get(key string) (*release.Release, error) {
	if rel, ok := s.heldRevision(key); ok {
		return rel, nil
	}
	return s.readRecord(key)
}

// readRecord reads a record through the driver once per storage, and
// returns a copy of it each time: Helm changes the status and labels of
// the revisions it is handed before writing them back.
func (s *releaseStorage) readRecord(key string) (*release.Release, error) {
	s.mu.Lock()
	rel, ok := s.read[key]
	s.mu.Unlock()
	if !ok {
		var err error
		if rel, err = s.Driver.Get(key); err != nil {
			return nil, err
		}
		s.mu.Lock()
		if s.read == nil {
			s.read = map[string]*release.Release{}
		}
		s.read[key] = rel
		s.mu.Unlock()
	}
	return copyRelease(rel), nil
}

// forgetRead drops what was read of a record that is being written or
// deleted.
func (s *releaseStorage) forgetRead(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.read, key)
}

// copyRelease copies what Helm changes of a release it read (its info and
// labels); the chart, values and manifest are shared, and only read.
func copyRelease(rel *release.Release) *release.Release {
	out := *rel
	if rel.Info != nil {
		info := *rel.Info
		out.Info = &info
	}
	out.Labels = maps.Clone(rel.Labels)
	return &out
}

// Query implements driver.Driver, with the held revisions the query
// selects.
func (s *releaseStorage) Query(query map[string]string) ([]*release.Release, error) {
	out, err := s.queryRecords(query)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, err
	}
	out = append(out, s.heldMatching(query)...)
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

// queryRecords answers a query from the records, with the cache's help
// when it can.
//
// Only the revisions a caller can need whole are read: the newest one
// and the deployed ones. Every other revision is returned as a summary
// of its cached labels (name, namespace, version, status, labels), with
// no chart, values or manifest. That is all Helm's callers reachable
// from the operator use of a revision that is neither:
//   - Last (upgrade, rollback, Get of the latest revision, so the
//     reconciler's Get, adopt and pendingrelease.go) keeps the newest;
//   - Deployed and DeployedAll (upgrade, rollback, uninstall) query the
//     deployed status, and update what they find: read whole;
//   - install's availableName looks at the newest revision's status;
//   - the pruning of old revisions (Create with MaxHistory), the purge of
//     an uninstall and rollback's check that a version exists use only
//     versions and statuses, and delete by name and version;
//   - uninstall updates the newest revision, read whole;
//   - rollback reads the revision it rolls back to with Get, by key;
//   - upgrade's rollback on failure (Atomic, which the operator does not
//     set) filters by status and rolls back by version;
//   - History, the one caller that shows older revisions whole, reads
//     them by key (actionClient.History); nothing else in the operator
//     queries revisions;
//   - helm-operator-plugins' reconciler calls Get, Install, Upgrade and
//     Uninstall (above), never History; its client's failure rollbacks
//     are Helm's rollback and uninstall (above).
func (s *releaseStorage) queryRecords(query map[string]string) ([]*release.Release, error) {
	name := query[chart.ReleaseNameLabel]
	if name == "" || query[chart.ReleaseOwnerLabel] != chart.ReleaseOwner || s.pending(name) {
		return s.Driver.Query(query)
	}
	secrets, err := releaserecords.CachedRecords(context.Background(), s.cache, s.namespace, name)
	if err != nil {
		return s.Driver.Query(query)
	}
	return s.readMatching(matchingRecords(secrets, query))
}

// matchingRecords returns the cached records a query selects, by
// ascending version. A revision the operator did not write would be
// hidden by the Secrets client anyway: it is not worth a read.
func matchingRecords(secrets []corev1.Secret, query map[string]string) []*corev1.Secret {
	selector := labels.SelectorFromSet(query)
	var out []*corev1.Secret
	for i := range secrets {
		if selector.Matches(labels.Set(secrets[i].Labels)) && releasetrust.CachedVerified(&secrets[i]) {
			out = append(out, &secrets[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return recordVersion(out[i]) < recordVersion(out[j]) })
	return out
}

// readMatching reads, newest first, the newest record that still exists
// and every deployed one; the others are summarised (see queryRecords).
func (s *releaseStorage) readMatching(records []*corev1.Secret) ([]*release.Release, error) {
	var out []*release.Release
	newest := true
	for i := len(records) - 1; i >= 0; i-- {
		rec := records[i]
		if !newest && rec.Labels[chart.ReleaseStatusLabel] != release.StatusDeployed.String() {
			out = append(out, s.recordSummary(rec))
			continue
		}
		rel, err := s.readRecord(rec.Name)
		if errors.Is(err, driver.ErrReleaseNotFound) {
			continue // deleted since the cache saw it
		}
		if err != nil {
			return nil, fmt.Errorf("reading revision %s: %w", rec.Name, err)
		}
		// A queried release carries all its Secret's labels, as Helm's
		// own query returns it.
		rel.Labels = withSystemLabels(rel)
		out = append(out, rel)
		newest = false
	}
	slices.Reverse(out)
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

// recordSummary is a revision as its cached labels describe it.
func (s *releaseStorage) recordSummary(rec *corev1.Secret) *release.Release {
	return &release.Release{
		Name:      rec.Labels[chart.ReleaseNameLabel],
		Namespace: s.namespace,
		Version:   recordVersion(rec),
		Info:      &release.Info{Status: release.Status(rec.Labels[chart.ReleaseStatusLabel])},
		Labels:    maps.Clone(rec.Labels),
	}
}

// isSummary reports whether a queried revision is a summary.
func isSummary(rel *release.Release) bool { return rel.Chart == nil }

// recordVersion is the version label of a record; 0 when it has none.
func recordVersion(rec *corev1.Secret) int {
	v, _ := strconv.Atoi(rec.Labels[chart.ReleaseVersionLabel])
	return v
}

// withSystemLabels adds back the labels Get leaves out.
func withSystemLabels(rel *release.Release) map[string]string {
	out := maps.Clone(rel.Labels)
	if out == nil {
		out = map[string]string{}
	}
	out[chart.ReleaseNameLabel] = rel.Name
	out[chart.ReleaseOwnerLabel] = chart.ReleaseOwner
	if rel.Info != nil {
		out[chart.ReleaseStatusLabel] = rel.Info.Status.String()
	}
	out[chart.ReleaseVersionLabel] = strconv.Itoa(rel.Version)
	return out
}
