package helmreconciler

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// Release records are written here rather than by Helm's Secrets driver,
// in the very layout that driver writes (type, labels, data key and the
// base64 of the gzipped JSON), so that Helm's driver and the helm CLI read
// them as their own. The one difference is the gzip level: Helm's driver
// compresses at gzip.BestCompression, which costs several times the CPU
// of gzip.BestSpeed on every install, upgrade and status change for a few
// more bytes in a record (docs/benchmarks.md); any level decodes the same.

// recordCompression is the gzip level of the release records written.
const recordCompression = gzip.BestSpeed

// Labels Helm's driver stamps with the Unix time of a write.
const (
	createdAtLabel  = "createdAt"
	modifiedAtLabel = "modifiedAt"
)

// Create implements driver.Driver as Helm's Secrets driver does.
func (s *releaseStorage) Create(key string, rls *release.Release) error {
	obj, err := releaseRecord(key, rls, createdAtLabel)
	if err != nil {
		return fmt.Errorf("create: failed to encode release %q: %w", rls.Name, err)
	}
	if _, err := s.secrets.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return driver.ErrReleaseExists
		}
		return fmt.Errorf("create: failed to create: %w", err)
	}
	return nil
}

// Update implements driver.Driver as Helm's Secrets driver does.
func (s *releaseStorage) Update(key string, rls *release.Release) error {
	obj, err := releaseRecord(key, rls, modifiedAtLabel)
	if err != nil {
		return fmt.Errorf("update: failed to encode release %q: %w", rls.Name, err)
	}
	if _, err := s.secrets.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update: failed to update: %w", err)
	}
	return nil
}

// Delete implements driver.Driver with the one request it needs. Helm's
// driver reads the record first, to return it; none of Helm's callers
// uses what it returns (pruning the history, purging on uninstall), so
// this returns an empty release rather than pay a read per revision
// pruned.
func (s *releaseStorage) Delete(key string) (*release.Release, error) {
	err := s.secrets.Delete(context.Background(), key, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("delete: failed to delete: %w", err)
	}
	return &release.Release{}, nil
}

// releaseRecord is the Secret Helm's driver writes for a revision: the
// release's labels, the system labels and the time of the write under
// timeLabel.
func releaseRecord(key string, rls *release.Release, timeLabel string) (*corev1.Secret, error) {
	data, err := encodeRecord(rls)
	if err != nil {
		return nil, err
	}
	labels := make(map[string]string, len(rls.Labels)+5)
	maps.Copy(labels, rls.Labels)
	labels[timeLabel] = strconv.FormatInt(time.Now().Unix(), 10)
	labels[chart.ReleaseNameLabel] = rls.Name
	labels[chart.ReleaseOwnerLabel] = chart.ReleaseOwner
	labels[chart.ReleaseStatusLabel] = rls.Info.Status.String()
	labels[chart.ReleaseVersionLabel] = strconv.Itoa(rls.Version)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: labels},
		Type:       chart.ReleaseSecretType,
		Data:       map[string][]byte{releasetrust.ReleaseDataKey: data},
	}, nil
}

// gzipWriters are reused: a compressor's state is most of the cost of
// making one.
var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, recordCompression) // the level is valid
	return w
}}

// encodeRecord encodes a release as Helm's driver does, at
// recordCompression.
func encodeRecord(rls *release.Release) ([]byte, error) {
	return encodeRecordAt(rls, gzipWriters.Get().(*gzip.Writer), gzipWriters.Put)
}

// encodeRecordAt encodes a release with w, handed back to done afterwards.
func encodeRecordAt(rls *release.Release, w *gzip.Writer, done func(any)) ([]byte, error) {
	defer done(w)
	raw, err := json.Marshal(rls)
	if err != nil {
		return nil, err
	}
	var zipped bytes.Buffer
	w.Reset(&zipped)
	if _, err := w.Write(raw); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(zipped.Len()))
	base64.StdEncoding.Encode(out, zipped.Bytes())
	return out, nil
}
