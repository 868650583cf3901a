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
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// Release records are written here rather than by Helm's Secrets driver,
// in the very layout that driver writes (type, labels, data key and the
// base64 of the gzipped JSON), so that Helm's driver and the helm CLI read
// them as their own. Two things differ. The gzip level: Helm's driver
// compresses at gzip.BestCompression, which costs several times the CPU
// of gzip.BestSpeed on every install, upgrade and status change for a few
// more bytes in a record (docs/benchmarks.md); any level decodes the same.
// And when: a revision is written once, in its final state, never pending
// (below).

// recordCompression is the gzip level of the release records written.
const recordCompression = gzip.BestSpeed

// Labels Helm's driver stamps with the Unix time of a write.
const (
	createdAtLabel  = "createdAt"
	modifiedAtLabel = "modifiedAt"
)

// A revision Helm creates pending (pending-install, pending-upgrade,
// pending-rollback) is not written: it is held by the storage, and the
// first later Update of its key writes it, once, in its final state
// (deployed, failed). An install then costs one record write instead of
// two, an upgrade two (the new revision, the previous one superseded)
// instead of three.
//
// Helm writes the pending record first so that a process that dies
// mid-operation leaves a trace. Without it, a process that dies after
// applying the objects leaves objects and no record of them (or, mid
// upgrade, the previous revision superseded and no deployed one). Both
// converge: Helm's install adopts objects carrying Helm's ownership
// metadata (the managed-by label and release annotations every object of
// a release carries), and Helm's upgrade takes a superseded last revision
// as the current one. Records an earlier version of the operator left
// pending are still recovered by pendingrelease.go.
//
// The held revision lives in this storage, which serves one reconcile's
// actions: Get and Query answer it from the held copy, as Helm expects
// to find the revision it created. A revision whose final write failed
// stays held; heldWriteError reports it (Helm's install only logs it).

// heldRecord is a revision created pending and not yet written.
type heldRecord struct {
	rel *release.Release
	// writeErr is the error of the last attempt to write it.
	writeErr error
}

// Create implements driver.Driver as Helm's Secrets driver does, holding
// a pending revision.
func (s *releaseStorage) Create(key string, rls *release.Release) error {
	s.forgetRead(key)
	if rls.Info != nil && rls.Info.Status.IsPending() {
		return s.hold(key, rls)
	}
	return s.create(key, rls)
}

// hold keeps a revision created pending until its final Update. A
// record the operator did not write that the cache shows under the
// revision's key refuses it at once (UntrustedRecordError), before Helm
// applies anything of the revision: its final write could only fail.
func (s *releaseStorage) hold(key string, rls *release.Release) error {
	if err := s.untrustedInTheWay(key, rls.Name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[key]; ok {
		return driver.ErrReleaseExists
	}
	if s.held == nil {
		s.held = map[string]*heldRecord{}
	}
	s.held[key] = &heldRecord{rel: rls}
	return nil
}

// untrustedInTheWay is an UntrustedRecordError when the cache holds a
// record of the release under key that did not verify. The cache may lag:
// a record it does not show yet is found by the final write instead.
func (s *releaseStorage) untrustedInTheWay(key, name string) error {
	if s.cache == nil {
		return nil
	}
	secrets, err := releaserecords.CachedRecords(context.Background(), s.cache, s.namespace, name)
	if err != nil {
		return nil
	}
	for i := range secrets {
		if secrets[i].Name == key && !releasetrust.CachedVerified(&secrets[i]) {
			return &releasetrust.UntrustedRecordError{Namespace: s.namespace, Name: key}
		}
	}
	return nil
}

// create writes a new record.
func (s *releaseStorage) create(key string, rls *release.Release) error {
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
	s.wrote(rls)
	return nil
}

// Update implements driver.Driver as Helm's Secrets driver does; the
// first Update of a held revision creates its record.
func (s *releaseStorage) Update(key string, rls *release.Release) error {
	s.forgetRead(key)
	if handled, err := s.writeHeld(key, rls); handled {
		return err
	}
	obj, err := releaseRecord(key, rls, modifiedAtLabel)
	if err != nil {
		return fmt.Errorf("update: failed to encode release %q: %w", rls.Name, err)
	}
	if _, err := s.secrets.Update(context.Background(), obj, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update: failed to update: %w", err)
	}
	s.wrote(rls)
	return nil
}

// wrote tells the expectations of a revision written (see expectations):
// a failed install or upgrade writes its record too, and until the cache
// shows it, the release is read from the API server. The record of a
// failed install is written last, right before the reconciler retries.
func (s *releaseStorage) wrote(rls *release.Release) {
	if s.written != nil {
		s.written(rls.Name, rls.Version)
	}
}

// writeHeld writes a held revision in the state rls is in, unless it is
// still pending; handled is false when key is not held.
func (s *releaseStorage) writeHeld(key string, rls *release.Release) (handled bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[key]
	if !ok {
		return false, nil
	}
	h.rel = rls
	if rls.Info != nil && rls.Info.Status.IsPending() {
		return true, nil
	}
	if h.writeErr = s.create(key, rls); h.writeErr != nil {
		return true, h.writeErr
	}
	delete(s.held, key)
	return true, nil
}

// heldRevision returns the held revision under key.
func (s *releaseStorage) heldRevision(key string) (*release.Release, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.held[key]
	if !ok {
		return nil, false
	}
	return h.rel, true
}

// heldWriteError is the error of the final write of a held revision that
// failed, nil when the revision was written or never held.
func (s *releaseStorage) heldWriteError(name string, version int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.held[recordKey(name, version)]; ok {
		return h.writeErr
	}
	return nil
}

// heldMatching returns the held revisions a query selects.
func (s *releaseStorage) heldMatching(query map[string]string) []*release.Release {
	s.mu.Lock()
	defer s.mu.Unlock()
	selector := labels.SelectorFromSet(query)
	var out []*release.Release
	for _, h := range s.held {
		if selector.Matches(labels.Set(withSystemLabels(h.rel))) {
			out = append(out, h.rel)
		}
	}
	return out
}

// recordKey is the key Helm's storage gives a revision.
func recordKey(name string, version int) string {
	return fmt.Sprintf("%s.%s.v%d", storage.HelmStorageType, name, version)
}

// Delete implements driver.Driver with the one request it needs. Helm's
// driver reads the record first, to return it; none of Helm's callers
// uses what it returns (pruning the history, purging on uninstall), so
// this returns an empty release rather than pay a read per revision
// pruned. A held revision is dropped without a request.
func (s *releaseStorage) Delete(key string) (*release.Release, error) {
	s.forgetRead(key)
	if s.dropHeld(key) {
		return &release.Release{}, nil
	}
	err := s.secrets.Delete(context.Background(), key, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil, driver.ErrReleaseNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("delete: failed to delete: %w", err)
	}
	return &release.Release{}, nil
}

// dropHeld forgets a held revision; false when key is not held.
func (s *releaseStorage) dropHeld(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.held[key]
	delete(s.held, key)
	return ok
}

// releaseRecord is the Secret Helm's driver writes for a revision: the
// release's labels, the system labels and the time of the write under
// timeLabel.
func releaseRecord(key string, rls *release.Release, timeLabel string) (*corev1.Secret, error) {
	data, err := encodeRecord(rls)
	if err != nil {
		return nil, err
	}
	recordLabels := make(map[string]string, len(rls.Labels)+5)
	maps.Copy(recordLabels, rls.Labels)
	recordLabels[timeLabel] = strconv.FormatInt(time.Now().Unix(), 10)
	recordLabels[chart.ReleaseNameLabel] = rls.Name
	recordLabels[chart.ReleaseOwnerLabel] = chart.ReleaseOwner
	recordLabels[chart.ReleaseStatusLabel] = rls.Info.Status.String()
	recordLabels[chart.ReleaseVersionLabel] = strconv.Itoa(rls.Version)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key, Labels: recordLabels},
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
