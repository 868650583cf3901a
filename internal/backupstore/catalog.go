package backupstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"
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
	// Problem says why the backup would not restore, or could not be
	// read: its manifest does not decode, is of a format this mover does
	// not read, or is too large for a listing (it may still restore),
	// or its archive is missing or of another size than recorded. Empty
	// otherwise; the archive's checksums are checked by a restore, not by
	// a listing.
	Problem string
}

// Footprint estimates the bytes b holds in memory: its fields and the
// strings they refer to.
func (b *StoredBackup) Footprint() int {
	return int(unsafe.Sizeof(*b)) + len(b.Key) + len(b.Source.Namespace) + len(b.Source.Name) + len(b.Source.UID) + len(b.Problem)
}

// maxProblemLength bounds a backup's Problem, which may quote what the
// store answered.
const maxProblemLength = 512

// Defaults of ListOptions: what a listing of a store that someone else
// names may cost.
const (
	// DefaultListMaxObjects: 10,000 backups of two objects each.
	DefaultListMaxObjects = 20_000
	// DefaultListMaxPages: S3 pages hold up to 1,000 keys, so this
	// leaves room for a service that sends fewer.
	DefaultListMaxPages = 100
	// DefaultListMaxResponseBytes: a page of 1,000 keys of S3's longest
	// is about 1.2 MiB.
	DefaultListMaxResponseBytes = 4 << 20
	// DefaultListManifestReaders is how many manifests a listing reads
	// at once.
	DefaultListManifestReaders = 8
)

// ListOptions configure ListBackups. Zero values take the defaults.
type ListOptions struct {
	// Manifests remembers what was read of each manifest, for the next
	// listings; nil reads every manifest.
	Manifests *ManifestCache
	// Scope names the store in Manifests: what was read under one scope
	// is never used for another. A process that lists stores others name
	// gives each its own: who named it, and where it is.
	Scope string
	// Keep, when set, says which backup keys to list: the objects of
	// other keys count towards MaxObjects, but are neither kept nor read.
	Keep func(key string) bool
	// MaxObjects bounds the objects listed (DefaultListMaxObjects); past
	// it the listing is cut.
	MaxObjects int
	// MaxPages bounds the requests of an S3 listing
	// (DefaultListMaxPages); past it the listing is cut.
	MaxPages int
	// MaxResponseBytes bounds the body of every S3 response of the
	// listing, manifests and errors included
	// (DefaultListMaxResponseBytes); a larger one fails the listing.
	MaxResponseBytes int64
	// ManifestBytes bounds what is read of one manifest
	// (DefaultManifestSummaryBytes).
	ManifestBytes int64
	// Readers is how many manifests are read at once
	// (DefaultListManifestReaders).
	Readers int
	// Gate, when set, is called before each manifest read and the
	// function it returns after it: a process that lists for many
	// callers bounds its reads there. Its error ends the listing.
	Gate func(ctx context.Context) (done func(), err error)
}

func (o ListOptions) withDefaults() ListOptions {
	if o.MaxObjects <= 0 {
		o.MaxObjects = DefaultListMaxObjects
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultListMaxPages
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultListMaxResponseBytes
	}
	if o.ManifestBytes <= 0 {
		o.ManifestBytes = DefaultManifestSummaryBytes
	}
	if o.Readers <= 0 {
		o.Readers = DefaultListManifestReaders
	}
	return o
}

// Listing is what ListBackups found.
type Listing struct {
	Backups []StoredBackup
	// Cut says that the store held more than the listing's bound of
	// objects or pages: Backups are those of the objects listed before
	// it stopped.
	Cut bool
}

// ListBackups lists the complete backups of a store, those with a
// manifest. It reads the summary of every manifest o.Manifests does not
// remember, and checks each archive's size against the listing; it
// downloads no archive. A manifest that cannot be read is a backup with a
// Problem; a store that cannot be listed or read is an error.
//
// What it holds is bounded whatever the store answers: at most
// o.MaxObjects objects of o.MaxPages pages, each S3 response at most
// o.MaxResponseBytes, o.Readers manifests read at once, at most
// o.ManifestBytes of each.
func ListBackups(ctx context.Context, store Store, o ListOptions) (Listing, error) {
	o = o.withDefaults()
	ctx = withRequestBounds(ctx, requestBounds{maxResponseBytes: o.MaxResponseBytes, maxListPages: o.MaxPages})
	found, archives, cut, err := walkBackups(ctx, store, o)
	if err != nil {
		return Listing{}, err
	}
	listed, err := readManifests(ctx, store, o, found)
	if err != nil {
		return Listing{}, err
	}
	out := Listing{Backups: make([]StoredBackup, 0, len(listed)), Cut: cut}
	for _, b := range listed {
		if b.Problem == "" {
			archive, ok := archives[ArchiveKey(b.Key, b.compression)]
			switch {
			case !ok:
				b.Problem = fmt.Sprintf("the archive %s is missing", store.Location(ArchiveKey(b.Key, b.compression)))
			case archive != b.ArchiveSize:
				b.Problem = fmt.Sprintf("the archive is %d bytes, the manifest says %d", archive, b.ArchiveSize)
			}
		}
		out.Backups = append(out.Backups, b.StoredBackup)
	}
	return out, nil
}

// walkBackups lists the store's manifests and archives of the kept keys,
// up to o.MaxObjects objects; cut says it stopped before the end.
func walkBackups(ctx context.Context, store Store, o ListOptions) (manifests []ObjectInfo, archives map[string]int64, cut bool, err error) {
	archives = map[string]int64{}
	seen := 0
	err = store.Walk(ctx, "", func(obj ObjectInfo) error {
		if seen == o.MaxObjects {
			return errListingCut
		}
		seen++
		dir, name := path.Split(obj.Key)
		key := strings.TrimSuffix(dir, "/")
		if key == "" || (o.Keep != nil && !o.Keep(key)) {
			return nil
		}
		switch name {
		case ManifestName:
			manifests = append(manifests, obj)
		case CompressionGzip.ArchiveName(), CompressionNone.ArchiveName():
			archives[obj.Key] = obj.Size
		}
		return nil
	})
	if errors.Is(err, errListingCut) {
		return manifests, archives, true, nil
	}
	return manifests, archives, false, err
}

// readManifests reads the manifest objects found, o.Readers at a time, in
// their order.
func readManifests(ctx context.Context, store Store, o ListOptions, found []ObjectInfo) ([]listedBackup, error) {
	listed := make([]listedBackup, len(found))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(o.Readers, len(found)) {
		wg.Go(func() {
			for i := range next {
				b, err := o.Manifests.read(ctx, store, o, found[i])
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
// the listing's scope and the manifest object's key and version (its ETag,
// size and time), so that listing a store again reads only the manifests
// written since, and two scopes never share what they read. It holds at
// most manifestCacheBytes; its zero value is ready to use.
type ManifestCache struct {
	mu      sync.Mutex
	entries map[manifestID]listedBackup
	bytes   int
}

// manifestCacheBytes bounds a ManifestCache: about 100,000 backups of
// the operator's keys.
const manifestCacheBytes = 32 << 20

// manifestID identifies a manifest object's version in a scope: a hash,
// so that what a store names does not make the cache's keys longer.
type manifestID [sha256.Size]byte

// manifestEntryOverhead is what an entry costs besides its backup: its
// key and the map's own.
const manifestEntryOverhead = sha256.Size + 48

func manifestIDOf(scope string, o ObjectInfo) manifestID {
	h := sha256.New()
	for _, s := range []string{scope, o.Key, o.ETag} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(s)))
		_, _ = h.Write([]byte(s))
	}
	_ = binary.Write(h, binary.BigEndian, [2]int64{o.Size, o.ModTime.UnixNano()})
	return manifestID(h.Sum(nil))
}

// listedBackup is a listed backup with the compression its archive name
// depends on.
type listedBackup struct {
	StoredBackup
	compression Compression
}

// read returns what the manifest object says of its backup: remembered,
// or read now through o.Gate. c may be nil.
func (c *ManifestCache) read(ctx context.Context, store Store, o ListOptions, manifest ObjectInfo) (listedBackup, error) {
	id := manifestIDOf(o.Scope, manifest)
	if b, ok := c.get(id); ok {
		return b, nil
	}
	if o.Gate != nil {
		done, err := o.Gate(ctx)
		if err != nil {
			return listedBackup{}, err
		}
		defer done()
	}
	b, err := readListedBackup(ctx, store, strings.TrimSuffix(path.Dir(manifest.Key), "/"), o.ManifestBytes)
	if err != nil {
		return b, err
	}
	c.put(id, b)
	return b, nil
}

// errManifestEncrypted is the problem of a backup whose manifest the store
// would not decrypt.
const errManifestEncrypted = "the storage refused to read the manifest with the listing's encryption: " +
	"it was written with SSE-C and another key, or the listing has none"

// readListedBackup reads the summary of the manifest of key.
func readListedBackup(ctx context.Context, store Store, key string, limit int64) (listedBackup, error) {
	b := listedBackup{StoredBackup: StoredBackup{Key: key}}
	body, err := store.Get(ctx, ManifestKey(key))
	var s manifestSummary
	if err == nil {
		s, err = readManifestSummary(body, limit)
		_ = body.Close() // read-only
		if err != nil {
			err = fmt.Errorf("%s: %w", store.Location(ManifestKey(key)), err)
		}
	}
	switch {
	case errors.Is(err, errManifestTooLarge):
		// What came before the files is known.
		b.CreatedAt, b.Source, b.FormatVersion = s.CreatedAt, s.Source, s.FormatVersion
		b.Problem = truncateUTF8(err.Error(), maxProblemLength)
	case errors.Is(err, ErrEncryption):
		// Written with another SSE-C key, or with one where the listing
		// has none: a problem of this backup. The store's answer is not
		// quoted.
		b.Problem = truncateUTF8(store.Location(ManifestKey(key))+": "+errManifestEncrypted, maxProblemLength)
	case errors.Is(err, ErrUnknownFormat), errors.Is(err, ErrCorruptArchive), errors.Is(err, ErrNotFound):
		// Unreadable, or deleted since the listing: a problem of this
		// backup, not of the listing.
		b.Problem = truncateUTF8(err.Error(), maxProblemLength)
	case err != nil:
		return b, err
	default:
		b.CreatedAt, b.Source, b.FormatVersion = s.CreatedAt, s.Source, s.FormatVersion
		b.ArchiveSize, b.Files, b.compression = s.Archive.Size, s.DataFiles, s.Compression
	}
	return b, nil
}

func (c *ManifestCache) get(id manifestID) (listedBackup, bool) {
	if c == nil {
		return listedBackup{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.entries[id]
	return b, ok
}

// put remembers b; past manifestCacheBytes, it first forgets entries,
// whichever come first, down to three quarters of it.
func (c *ManifestCache) put(id manifestID, b listedBackup) {
	if c == nil {
		return
	}
	size := b.Footprint() + manifestEntryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[manifestID]listedBackup{}
	}
	if old, ok := c.entries[id]; ok {
		c.bytes -= old.Footprint() + manifestEntryOverhead
	}
	if c.bytes+size > manifestCacheBytes {
		for other, e := range c.entries {
			if c.bytes+size <= manifestCacheBytes*3/4 {
				break
			}
			delete(c.entries, other)
			c.bytes -= e.Footprint() + manifestEntryOverhead
		}
	}
	c.entries[id] = b
	c.bytes += size
}

// truncateUTF8 cuts s to at most n bytes, on a character boundary, and
// marks the cut.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " ..."
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
