package helmreconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
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
// them. The cache knows the revisions' names from their labels; each
// revision a query needs is then read by name. A release the cache has no
// revision of is not found without asking. Until the cache shows the
// revisions this process wrote (see expectations), queries go to the API
// server as before.
type releaseStorage struct {
	driver.Driver
	// secrets is the Secrets client Driver writes through.
	secrets   corev1client.SecretInterface
	cache     client.Reader
	namespace string
	// pending reports whether the cache may lack revisions of a release
	// this process wrote.
	pending func(name string) bool
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
		}, nil
	}
}

// Query implements driver.Driver.
func (s *releaseStorage) Query(query map[string]string) ([]*release.Release, error) {
	name := query[chart.ReleaseNameLabel]
	if name == "" || query[chart.ReleaseOwnerLabel] != chart.ReleaseOwner || s.pending(name) {
		return s.Driver.Query(query)
	}
	secrets, err := releaserecords.CachedRecords(context.Background(), s.cache, s.namespace, name)
	if err != nil {
		return s.Driver.Query(query)
	}
	selector := labels.SelectorFromSet(query)
	names := make([]string, 0, len(secrets))
	for i := range secrets {
		// A revision the operator did not write would be hidden by the
		// Secrets client anyway: it is not worth a read.
		if selector.Matches(labels.Set(secrets[i].Labels)) && releasetrust.CachedVerified(&secrets[i]) {
			names = append(names, secrets[i].Name)
		}
	}
	sort.Strings(names)

	var out []*release.Release
	for _, key := range names {
		rel, err := s.Get(key)
		if errors.Is(err, driver.ErrReleaseNotFound) {
			continue // deleted since the cache saw it
		}
		if err != nil {
			return nil, fmt.Errorf("reading revision %s: %w", key, err)
		}
		// A queried release carries all its Secret's labels, as Helm's
		// own query returns it.
		rel.Labels = withSystemLabels(rel)
		out = append(out, rel)
	}
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
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
