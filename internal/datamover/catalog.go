package datamover

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
)

// StoredBackup is what a listing of a store tells of one backup.
type StoredBackup struct {
	// Key is the backup's key in the store.
	Key       string
	CreatedAt time.Time
	Source    Source
	// ArchiveSize is the archive's size as the manifest records it.
	ArchiveSize int64
	// Files counts the files of the Echo's data.
	Files         int
	FormatVersion int
	// Problem says why the backup would not restore: its manifest does
	// not decode, is of a format this mover does not read, or its archive
	// is missing or of another size than recorded. Empty otherwise; the
	// archive's checksums are checked by a restore, not by a listing.
	Problem string
}

// ListBackups lists the complete backups of a store, those with a
// manifest, by key. It reads every manifest it has not read before
// (manifests remembers them) and checks each archive's size against the
// listing; it downloads no archive. A manifest that cannot be read is a
// backup with a Problem; a store that cannot be listed or read is an
// error.
func ListBackups(ctx context.Context, store Store, manifests *ManifestCache) ([]StoredBackup, error) {
	objects, err := store.List(ctx, "")
	if err != nil {
		return nil, err
	}
	sizes := make(map[string]int64, len(objects))
	for _, o := range objects {
		sizes[o.Key] = o.Size
	}
	var found []ObjectInfo
	for _, o := range objects {
		if dir, name := path.Split(o.Key); name == ManifestName && dir != "" {
			found = append(found, o)
		}
	}
	listed, err := readManifests(ctx, store, manifests, found)
	if err != nil {
		return nil, err
	}
	out := make([]StoredBackup, 0, len(listed))
	for _, b := range listed {
		if b.Problem == "" {
			archive, ok := sizes[ArchiveKey(b.Key, b.compression)]
			switch {
			case !ok:
				b.Problem = fmt.Sprintf("the archive %s is missing", store.Location(ArchiveKey(b.Key, b.compression)))
			case archive != b.ArchiveSize:
				b.Problem = fmt.Sprintf("the archive is %d bytes, the manifest says %d", archive, b.ArchiveSize)
			}
		}
		out = append(out, b.StoredBackup)
	}
	return out, nil
}

// manifestReaders is how many manifests ListBackups reads at once.
const manifestReaders = 8

// readManifests reads the manifest objects found, manifestReaders at a
// time, in their order.
func readManifests(ctx context.Context, store Store, manifests *ManifestCache, found []ObjectInfo) ([]listedBackup, error) {
	listed := make([]listedBackup, len(found))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(manifestReaders, len(found)) {
		wg.Go(func() {
			for i := range next {
				b, err := manifests.read(ctx, store, strings.TrimSuffix(path.Dir(found[i].Key), "/"), found[i])
				if err != nil {
					cancel(err)
					continue
				}
				listed[i] = b
			}
		})
	}
	for i := range found {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return listed, nil
}

// ManifestCache remembers what ListBackups read of each manifest, by
// location and stored object, so that listing a store again reads only
// the manifests written since. It holds at most a fixed number of
// entries; its zero value is ready to use.
type ManifestCache struct {
	mu      sync.Mutex
	entries map[manifestObject]listedBackup
}

// manifestCacheSize bounds a ManifestCache: past it, the cache starts
// over.
const manifestCacheSize = 100_000

// manifestObject identifies a stored manifest object.
type manifestObject struct {
	location string
	size     int64
	modTime  time.Time
}

// listedBackup is a listed backup with the compression its archive name
// depends on.
type listedBackup struct {
	StoredBackup
	compression Compression
}

func (c *ManifestCache) read(ctx context.Context, store Store, key string, manifest ObjectInfo) (listedBackup, error) {
	id := manifestObject{location: store.Location(manifest.Key), size: manifest.Size, modTime: manifest.ModTime}
	c.mu.Lock()
	b, ok := c.entries[id]
	c.mu.Unlock()
	if ok {
		return b, nil
	}
	b = listedBackup{StoredBackup: StoredBackup{Key: key}}
	m, err := fetchManifest(ctx, store, key)
	switch {
	case errors.Is(err, ErrUnknownFormat), errors.Is(err, ErrCorruptArchive), errors.Is(err, ErrUnsafePath), errors.Is(err, ErrNotFound):
		// Unreadable, or deleted since the listing: a problem of this
		// backup, not of the listing.
		b.Problem = err.Error()
	case err != nil:
		return b, err
	default:
		b.CreatedAt, b.Source, b.FormatVersion = m.CreatedAt, m.Source, m.FormatVersion
		b.ArchiveSize, b.Files, b.compression = m.Archive.Size, m.DataFiles(), m.Compression
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= manifestCacheSize {
		c.entries = map[manifestObject]listedBackup{}
	}
	c.entries[id] = b
	return b, nil
}
