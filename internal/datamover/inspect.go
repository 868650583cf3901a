package datamover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// InspectOptions configure Inspect.
type InspectOptions struct {
	// Store holds the backup under Key.
	Store backupstore.Store
	Key   string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// Inspect reads the manifest of the backup under o.Key and checks that its
// archive is there with the size the manifest records, without changing
// anything, and returns the manifest: what a restore needs to decide
// whether to go ahead and to recreate the Echo.
//
// It reads the manifest as Restore does: a missing manifest (no complete
// backup under the key) is ErrNotFound, a format version this mover does
// not read ErrUnknownFormat, a malformed manifest ErrCorruptArchive. An
// archive of another size than recorded is ErrChecksumMismatch, as in
// Restore. A missing archive is ErrCorruptArchive, where Restore says
// ErrNotFound: the manifest is written last, so a backup was made under
// the key and damaged afterwards, which is not the same as no backup.
//
// Inspect does not download the archive, so it does not verify its
// checksums: Restore verifies every entry and the whole archive against
// the manifest before it writes anything to the target.
func Inspect(ctx context.Context, o InspectOptions) (*backupstore.Manifest, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("%w: no store", backupstore.ErrInvalidArgument)
	}
	if err := backupstore.CheckKey(o.Key); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Info("inspect started", "location", o.Store.Location(o.Key))
	m, err := fetchManifest(ctx, o.Store, o.Key)
	if err != nil {
		return nil, err
	}
	archiveKey := backupstore.ArchiveKey(o.Key, m.Compression)
	info, err := o.Store.Stat(ctx, archiveKey)
	if errors.Is(err, backupstore.ErrNotFound) {
		// Not ErrNotFound: there is a backup under the key, a damaged one.
		return nil, fmt.Errorf("%w: the backup has a manifest but no archive: %s is missing", backupstore.ErrCorruptArchive, o.Store.Location(archiveKey))
	}
	if err != nil {
		return nil, err
	}
	if info.Size != m.Archive.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes, the manifest says %d", backupstore.ErrChecksumMismatch, o.Store.Location(archiveKey), info.Size, m.Archive.Size)
	}
	log.Info("inspect complete", "location", o.Store.Location(o.Key), "createdAt", m.CreatedAt,
		"files", m.DataFiles(), "dataBytes", m.DataSize(), "archiveBytes", m.Archive.Size)
	return m, nil
}

// fetchManifest reads and decodes the manifest of the backup under key. A
// missing manifest is the store's ErrNotFound: there is no complete backup
// under key. Decoding errors are those of DecodeManifest.
func fetchManifest(ctx context.Context, store backupstore.Store, key string) (*backupstore.Manifest, error) {
	manifestKey := backupstore.ManifestKey(key)
	body, err := store.Get(ctx, manifestKey)
	if err != nil {
		return nil, err
	}
	defer func() { _ = body.Close() }() // read-only
	m, err := backupstore.DecodeManifest(body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", store.Location(manifestKey), err)
	}
	return m, nil
}
