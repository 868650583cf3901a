package datamover

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// CopyOptions configure Copy.
type CopyOptions struct {
	// From holds the backup under Key; To receives it under the same key.
	From, To backupstore.Store
	Key      string
	// Checksum is the archive's checksum as the backup recorded it,
	// "sha256:<hex>": the copy of any other archive is refused.
	Checksum string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// checksumPrefix starts every recorded archive checksum.
const checksumPrefix = "sha256:"

// Copy copies the backup under o.Key from o.From to o.To and returns its
// manifest: the archive first, streamed and hashed on its way, then the
// manifest, so that a copy stopped halfway is never listed as a backup.
//
// The archive must be the one the backup recorded (o.Checksum): a source
// manifest recording another, or bytes that hash otherwise on their way,
// are ErrChecksumMismatch, and the mismatch is found before the archive's
// upload completes, so nothing is left at the destination (a store's Put
// stores an object whole or not at all). A destination already holding
// this very backup (same archive checksum) is a copy an earlier attempt
// completed: it is reported as it is. A destination holding another
// backup under the key is ErrAlreadyExists: nothing is overwritten.
func Copy(ctx context.Context, o CopyOptions) (*backupstore.Manifest, error) {
	if o.From == nil || o.To == nil {
		return nil, fmt.Errorf("%w: a copy needs a source and a destination store", backupstore.ErrInvalidArgument)
	}
	if err := backupstore.CheckKey(o.Key); err != nil {
		return nil, err
	}
	want, ok := strings.CutPrefix(o.Checksum, checksumPrefix)
	if !ok || want == "" {
		return nil, fmt.Errorf("%w: the backup's checksum must be sha256:<hex>, got %q", backupstore.ErrInvalidArgument, o.Checksum)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	raw, m, err := readSourceManifest(ctx, o.From, o.Key)
	if err != nil {
		return nil, fmt.Errorf("copy from %s: %w", o.From.Location(o.Key), err)
	}
	if m.Archive.SHA256 != want {
		return nil, fmt.Errorf("%w: the backup at %s records archive sha256:%s, not the backup's %s", backupstore.ErrChecksumMismatch,
			o.From.Location(o.Key), m.Archive.SHA256, o.Checksum)
	}
	if done, err := copiedBefore(ctx, o.To, o.Key, m); done || err != nil {
		if done {
			log.Info("copy already stored by an earlier attempt", "location", o.To.Location(o.Key), "sha256", want)
		}
		return m, err
	}
	start := time.Now()
	log.Info("copy started", "from", o.From.Location(o.Key), "to", o.To.Location(o.Key), "archiveBytes", m.Archive.Size)
	if err := copyArchive(ctx, o.From, o.To, o.Key, m); err != nil {
		return nil, err
	}
	if err := o.To.Put(ctx, backupstore.ManifestKey(o.Key), bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("copy to %s: %w", o.To.Location(o.Key), err)
	}
	elapsed := time.Since(start)
	log.Info("copy complete", "location", o.To.Location(o.Key), "archiveBytes", m.Archive.Size, "sha256", want,
		"seconds", elapsed.Seconds(), "mbPerSecond", rate(m.Archive.Size, elapsed))
	return m, nil
}

// readSourceManifest reads the manifest under key, as it is stored and
// decoded: the copy stores the very bytes.
func readSourceManifest(ctx context.Context, store backupstore.Store, key string) ([]byte, *backupstore.Manifest, error) {
	body, err := store.Get(ctx, backupstore.ManifestKey(key))
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = body.Close() }() // read-only
	var raw bytes.Buffer
	m, err := backupstore.DecodeManifest(io.TeeReader(body, &raw))
	if err != nil {
		return nil, nil, err
	}
	return raw.Bytes(), m, nil
}

// copiedBefore reports whether the destination already holds the backup
// m describes, whole; another backup under the key is ErrAlreadyExists.
func copiedBefore(ctx context.Context, to backupstore.Store, key string, m *backupstore.Manifest) (bool, error) {
	switch _, err := to.Stat(ctx, backupstore.ManifestKey(key)); {
	case errors.Is(err, backupstore.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("copy to %s: %w", to.Location(key), err)
	}
	there, err := Inspect(ctx, InspectOptions{Store: to, Key: key})
	if err == nil && there.Archive.SHA256 == m.Archive.SHA256 {
		return true, nil
	}
	if errors.Is(err, backupstore.ErrUnavailable) || errors.Is(err, backupstore.ErrAccessDenied) {
		return false, fmt.Errorf("copy to %s: %w", to.Location(key), err)
	}
	return false, fmt.Errorf("%w: %s holds another backup: nothing is overwritten", backupstore.ErrAlreadyExists, to.Location(key))
}

// copyArchive streams the archive from one store to the other, verifying
// its size and checksum before the destination's upload completes, and
// then that the destination stored all of it.
func copyArchive(ctx context.Context, from, to backupstore.Store, key string, m *backupstore.Manifest) error {
	archiveKey := backupstore.ArchiveKey(key, m.Compression)
	if err := backupstore.AbortIncompleteUpload(ctx, to, archiveKey); err != nil {
		return fmt.Errorf("copy to %s: %w", to.Location(archiveKey), err)
	}
	body, err := from.Get(ctx, archiveKey)
	if err != nil {
		return fmt.Errorf("copy from %s: %w", from.Location(archiveKey), err)
	}
	defer func() { _ = body.Close() }() // read-only
	src := &verifyingReader{r: body, sum: newHashCounter(), size: m.Archive.Size, sha256: m.Archive.SHA256, location: from.Location(archiveKey)}
	if err := to.Put(ctx, archiveKey, src); err != nil {
		if src.err != nil {
			return src.err
		}
		return fmt.Errorf("copy to %s: %w", to.Location(archiveKey), err)
	}
	info, err := to.Stat(ctx, archiveKey)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", to.Location(archiveKey), err)
	}
	if info.Size != m.Archive.Size {
		return fmt.Errorf("%w: %s stored %d bytes of the %d copied", backupstore.ErrChecksumMismatch, to.Location(archiveKey), info.Size, m.Archive.Size)
	}
	return nil
}

// verifyingReader passes the archive through, hashing it, and ends it with
// an error in place of io.EOF when it is not the archive the manifest
// records, so that the store receiving it drops the upload.
type verifyingReader struct {
	r        io.Reader
	sum      *hashCounter
	size     int64
	sha256   string
	location string
	err      error // the verification's or the source's error, once met
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	_, _ = v.sum.Write(p[:n])
	switch {
	case v.sum.n > v.size:
		v.err = fmt.Errorf("%w: %s is longer than the %d bytes the backup recorded", backupstore.ErrChecksumMismatch, v.location, v.size)
	case errors.Is(err, io.EOF) && v.sum.n != v.size:
		v.err = fmt.Errorf("%w: %s is %d bytes, the backup recorded %d", backupstore.ErrChecksumMismatch, v.location, v.sum.n, v.size)
	case errors.Is(err, io.EOF) && v.sum.sum() != v.sha256:
		v.err = fmt.Errorf("%w: %s hashes to sha256:%s, the backup recorded sha256:%s", backupstore.ErrChecksumMismatch, v.location, v.sum.sum(), v.sha256)
	case err != nil && !errors.Is(err, io.EOF):
		v.err = fmt.Errorf("copy from %s: %w", v.location, err)
	}
	if v.err != nil {
		return 0, v.err
	}
	return n, err
}
