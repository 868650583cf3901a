package releaserecords

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

const (
	// cachedManifestKey and cachedNotesKey hold, in the cache's copy of a
	// deployed release Secret, the release's manifest and notes in place of
	// the whole release.
	cachedManifestKey = "manifest"
	cachedNotesKey    = "notes"
	// cachedSummaryKey holds, in the cache's copy of every verified
	// release Secret, the revision's RevisionSummary as JSON.
	cachedSummaryKey = "summary"

	// releaseNameIndex indexes cached release Secrets by release name.
	releaseNameIndex = "helm.release.name"
)

// CacheTransform returns the cache transform of release Secrets (those
// chart.ReleaseRecordSelector selects, the only Secrets the operator caches).
//
// A release Secret holds the whole release: the chart with its templates
// and schema, the values and the manifest, gzipped, about 10 KiB for the
// echo chart, for every revision kept. The cache only needs to know which
// revision is the latest, its status and fingerprint (labels), whether the
// operator wrote it (see releasetrust), and what the deployed revision
// rendered (to find drift). So the cached copy keeps the metadata, the
// verdict of the signature check and, for a verified deployed revision,
// only its manifest and notes (the message of the Deployed condition);
// every verified revision also keeps its summary (chart, times,
// description), which the live API lists; everything else is dropped. Code that needs the whole release reads it
// from the API server.
//
// The signature is checked before anything is decoded: a Secret the
// operator did not write, however large or however deeply compressed, is
// never decompressed and costs the cache only its name and record labels.
func CacheTransform(signer *releasetrust.Signer) func(any) (any, error) {
	return func(obj any) (any, error) {
		s, ok := obj.(*corev1.Secret)
		if !ok || s.Labels[chart.ReleaseOwnerLabel] != chart.ReleaseOwner || releasetrust.IsCachedCopy(s) {
			// Informers may transform an object more than once: keep
			// what an earlier pass kept.
			return obj, nil
		}
		encoded := s.Data[releasetrust.ReleaseDataKey]
		verified := signer.Verify(s)
		s.ManagedFields = nil
		releasetrust.MarkCachedCopy(s, verified)
		if !verified {
			keepRecordMetadata(s)
			return s, nil
		}
		if len(encoded) == 0 {
			return s, nil
		}
		var rel storedRelease
		if err := Decode(encoded, &rel); err != nil {
			// Without a manifest the release is read from the API server.
			return s, nil //nolint:nilerr // a release the cache cannot decode is not an error of the cache
		}
		if summary, err := json.Marshal(rel.summary()); err == nil {
			s.Data[cachedSummaryKey] = summary
		}
		if s.Labels[chart.ReleaseStatusLabel] == string(release.StatusDeployed) {
			s.Data[cachedManifestKey] = []byte(rel.Manifest)
			s.Data[cachedNotesKey] = []byte(rel.Info.Notes)
		}
		return s, nil
	}
}

// keepRecordMetadata drops, from the cache's copy of a release Secret the
// operator did not write, the annotations, and the labels other than
// Helm's record labels: whoever wrote it chose their size.
func keepRecordMetadata(s *corev1.Secret) {
	s.Annotations = nil
	labels := map[string]string{}
	for _, k := range []string{chart.ReleaseOwnerLabel, chart.ReleaseNameLabel, chart.ReleaseStatusLabel, chart.ReleaseVersionLabel} {
		if v, ok := s.Labels[k]; ok {
			labels[k] = v
		}
	}
	s.Labels = labels
}

// storedRelease is the part of a stored release the cache keeps.
type storedRelease struct {
	Manifest string `json:"manifest"`
	Info     struct {
		Notes         string    `json:"notes"`
		Description   string    `json:"description"`
		FirstDeployed time.Time `json:"first_deployed"`
		LastDeployed  time.Time `json:"last_deployed"`
	} `json:"info"`
	Chart struct {
		Metadata struct {
			Name       string `json:"name"`
			Version    string `json:"version"`
			AppVersion string `json:"appVersion"`
		} `json:"metadata"`
	} `json:"chart"`
}

func (r *storedRelease) summary() RevisionSummary {
	return RevisionSummary{
		Chart:         r.Chart.Metadata.Name,
		ChartVersion:  r.Chart.Metadata.Version,
		AppVersion:    r.Chart.Metadata.AppVersion,
		Description:   r.Info.Description,
		FirstDeployed: r.Info.FirstDeployed,
		LastDeployed:  r.Info.LastDeployed,
	}
}

// Decode reads Helm's storage format, base64 of (usually gzipped) JSON,
// into rel: a *release.Release, or a struct of only the fields wanted.
func Decode(encoded []byte, rel any) error {
	raw := make([]byte, base64.StdEncoding.DecodedLen(len(encoded)))
	n, err := base64.StdEncoding.Decode(raw, encoded)
	if err != nil {
		return fmt.Errorf("decoding base64: %w", err)
	}
	raw = raw[:n]
	var r io.Reader = bytes.NewReader(raw)
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("opening gzip: %w", err)
		}
		defer func() { _ = zr.Close() }()
		r = io.LimitReader(zr, maxReleaseSize)
	}
	if err := json.NewDecoder(r).Decode(rel); err != nil {
		return fmt.Errorf("decoding JSON: %w", err)
	}
	return nil
}

// maxReleaseSize bounds a decompressed release.
const maxReleaseSize = 64 << 20

// IndexByRelease indexes the cached release Secrets by release name, so
// that finding a release's revisions does not scan its namespace.
func IndexByRelease(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, &corev1.Secret{}, releaseNameIndex, releaseNameOf)
}

// releaseNameOf is the index function of releaseNameIndex.
func releaseNameOf(o client.Object) []string {
	if name := ReleaseNameOf(o); name != "" {
		return []string{name}
	}
	return nil
}

// CachedRecords lists the cached release Secrets of a release: every
// Secret of the namespace that carries Helm's release labels with the
// release's name, whoever wrote it. Their data is what CacheTransform
// kept.
func CachedRecords(ctx context.Context, c client.Reader, namespace, name string) ([]corev1.Secret, error) {
	secrets := &corev1.SecretList{}
	if err := c.List(ctx, secrets, client.InNamespace(namespace), client.MatchingFields{releaseNameIndex: name}); err != nil {
		return nil, fmt.Errorf("listing the cached revisions of release %s: %w", name, err)
	}
	return secrets.Items, nil
}

// ReleaseNameOf names the release a release Secret belongs to; empty for
// another Secret.
func ReleaseNameOf(s client.Object) string {
	if s.GetLabels()[chart.ReleaseOwnerLabel] != chart.ReleaseOwner {
		return ""
	}
	return s.GetLabels()[chart.ReleaseNameLabel]
}

// CachedLatest returns the latest verified revision of a release, as
// cached: its version, status and fingerprint label, and the manifest and
// notes the cache keeps of a deployed revision (hasManifest), not its chart
// or values. It is nil when the cache holds none, or when the latest
// revision does not belong to owner: it was written for a deleted object of
// the same name, or by hand, and only the API server can tell what it is.
func CachedLatest(ctx context.Context, c client.Reader, namespace, name string, owner types.UID) (rel *release.Release, hasManifest bool, err error) {
	secrets, err := CachedRecords(ctx, c, namespace, name)
	if err != nil {
		return nil, false, err
	}
	latest := newestRecord(secrets, func(*corev1.Secret) bool { return true })
	if latest == nil || !ownedBy(latest, owner) {
		return nil, false, nil
	}
	rel = cachedRelease(latest)
	_, hasManifest = latest.Data[cachedManifestKey]
	return rel, hasManifest, nil
}

// DeployedIn returns, among a release's cached records (CachedRecords),
// the newest verified revision whose status is deployed and that belongs
// to owner, as cached: its version, fingerprint label, manifest and
// notes. It is nil when there is none.
func DeployedIn(secrets []corev1.Secret, owner types.UID) *release.Release {
	deployed := newestRecord(secrets, func(s *corev1.Secret) bool {
		return s.Labels[chart.ReleaseStatusLabel] == string(release.StatusDeployed) && ownedBy(s, owner)
	})
	if deployed == nil {
		return nil
	}
	return cachedRelease(deployed)
}

// newestRecord returns the verified record of the highest version among
// those keep takes, or nil.
func newestRecord(secrets []corev1.Secret, keep func(*corev1.Secret) bool) *corev1.Secret {
	var newest *corev1.Secret
	newestVersion := 0
	for i := range secrets {
		s := &secrets[i]
		v, err := strconv.Atoi(s.Labels[chart.ReleaseVersionLabel])
		if err != nil || !releasetrust.CachedVerified(s) || !keep(s) {
			continue
		}
		if v > newestVersion {
			newest, newestVersion = s, v
		}
	}
	return newest
}

// cachedRelease is the release a cached record describes: what the cache
// keeps of it, not its chart or values.
func cachedRelease(s *corev1.Secret) *release.Release {
	version, _ := strconv.Atoi(s.Labels[chart.ReleaseVersionLabel])
	return &release.Release{
		Name: s.Labels[chart.ReleaseNameLabel], Namespace: s.Namespace, Version: version, Manifest: string(s.Data[cachedManifestKey]),
		Info:   &release.Info{Status: release.Status(s.Labels[chart.ReleaseStatusLabel]), Notes: string(s.Data[cachedNotesKey])},
		Labels: map[string]string{FingerprintLabel: s.Labels[FingerprintLabel], ValuesLabel: s.Labels[ValuesLabel]},
	}
}

func ownedBy(o client.Object, uid types.UID) bool {
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == uid {
			return true
		}
	}
	return false
}
