package releaserecords

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// RevisionSummary is what the cache keeps of every verified revision of a
// release, beside its labels: enough to list a release's history without
// reading a release record.
type RevisionSummary struct {
	Chart         string    `json:"chart"`
	ChartVersion  string    `json:"chartVersion"`
	AppVersion    string    `json:"appVersion,omitempty"`
	Description   string    `json:"description,omitempty"`
	FirstDeployed time.Time `json:"firstDeployed"`
	LastDeployed  time.Time `json:"lastDeployed"`
}

// Revision is one revision of a release, as the cache holds it.
type Revision struct {
	Namespace string
	Release   string
	Version   int
	Status    release.Status
	// Record is the name of the release Secret.
	Record  string
	Summary RevisionSummary
}

// CachedRevisions lists the revisions of every release of a namespace (of
// every namespace when namespace is empty) whose record the operator wrote:
// records that do not verify are left out, whoever can see them.
func CachedRevisions(ctx context.Context, c client.Reader, namespace string) ([]Revision, error) {
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: chart.ReleaseRecordSelector()}); err != nil {
		return nil, fmt.Errorf("listing the cached release records: %w", err)
	}
	return revisionsOf(secrets.Items), nil
}

// CachedReleaseRevisions lists the revisions of one release whose record
// the operator wrote, through the cache's release-name index.
func CachedReleaseRevisions(ctx context.Context, c client.Reader, namespace, release string) ([]Revision, error) {
	secrets, err := CachedRecords(ctx, c, namespace, release)
	if err != nil {
		return nil, err
	}
	return revisionsOf(secrets), nil
}

// revisionsOf reads cached release Secrets, leaving out those
// cachedRevision does not take.
func revisionsOf(secrets []corev1.Secret) []Revision {
	revisions := make([]Revision, 0, len(secrets))
	for i := range secrets {
		if r, ok := cachedRevision(&secrets[i]); ok {
			revisions = append(revisions, r)
		}
	}
	return revisions
}

// cachedRevision reads a cached release Secret; ok is false for a record
// that did not verify or that the cache could not summarise.
func cachedRevision(s *corev1.Secret) (Revision, bool) {
	name := ReleaseNameOf(s)
	version, err := strconv.Atoi(s.Labels[chart.ReleaseVersionLabel])
	if name == "" || err != nil || !releasetrust.CachedVerified(s) {
		return Revision{}, false
	}
	r := Revision{
		Namespace: s.Namespace,
		Release:   name,
		Version:   version,
		Status:    release.Status(s.Labels[chart.ReleaseStatusLabel]),
		Record:    s.Name,
	}
	if err := json.Unmarshal(s.Data[cachedSummaryKey], &r.Summary); err != nil {
		return Revision{}, false
	}
	return r, true
}

// ErrNotVerified is returned by ReadRevision for a record the operator did
// not write, or that was changed since.
var ErrNotVerified = errors.New("the release record does not carry the operator's signature")

// ReadRevision reads a whole release record from the API server (the cache
// keeps only summaries) and decodes it once its signature verifies.
func ReadRevision(ctx context.Context, api client.Reader, verifier *releasetrust.Signer, namespace, record string) (*release.Release, error) {
	s := &corev1.Secret{}
	if err := api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: record}, s); err != nil {
		return nil, fmt.Errorf("reading release record %s/%s: %w", namespace, record, err)
	}
	if !verifier.Verify(s) {
		return nil, fmt.Errorf("release record %s/%s: %w", namespace, record, ErrNotVerified)
	}
	rel := &release.Release{}
	if err := Decode(s.Data[releasetrust.ReleaseDataKey], rel); err != nil {
		return nil, fmt.Errorf("decoding release record %s/%s: %w", namespace, record, err)
	}
	return rel, nil
}
