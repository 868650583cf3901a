package liveapi

import (
	"context"
	"sync"
	"time"
	"unsafe"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// locationListing is what a listing of a location's storage found.
type locationListing struct {
	backups []backupstore.StoredBackup
	// cut says the storage held more than a listing reads: backups are
	// those of the objects listed before it stopped.
	cut bool
}

// footprint estimates the bytes the listing holds.
func (l locationListing) footprint() int {
	n := int(unsafe.Sizeof(l))
	for i := range l.backups {
		n += l.backups[i].Footprint()
	}
	return n
}

// listingCache remembers the listings of locations for listingTTL, or
// why their storage could not be read, within bounds across locations: at
// most maxBackups backups and maxBytes bytes (by their footprint). Past
// them, the listings not read for the longest go first, stale ones before
// any other; a listing larger than the bounds is served and not kept.
type listingCache struct {
	maxBackups, maxBytes int
	now                  func() time.Time

	mu      sync.Mutex
	entries map[string]*cachedListing
	// backups and bytes are what the entries hold.
	backups, bytes int
}

// cachedListing is the latest listing of one location. Its fields other
// than lock are the cache's, guarded by its mutex.
type cachedListing struct {
	// lock is held by the request that reads the location: other
	// requests for it wait for that listing rather than read it again.
	lock chan struct{}
	// version is the location's resourceVersion when it was read; empty
	// when nothing is kept.
	version string
	at      time.Time
	listing locationListing
	// err is why the storage could not be read, instead of a listing.
	err     error
	backups int
	bytes   int
	// forgotten is set once the entry has left the cache: what a request
	// that still holds it reads is not kept.
	forgotten bool
}

// forgetAtEntries is the number of locations past which an entry for a
// new one first forgets the stale entries.
const forgetAtEntries = 256

func newListingCache(maxBackups, maxBytes int) *listingCache {
	return &listingCache{maxBackups: maxBackups, maxBytes: maxBytes, now: time.Now, entries: map[string]*cachedListing{}}
}

// entry is the entry of location id, made if needed.
func (c *listingCache) entry(id string) *cachedListing {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		if len(c.entries) >= forgetAtEntries {
			c.forgetStale()
		}
		e = &cachedListing{lock: make(chan struct{}, 1)}
		c.entries[id] = e
	}
	return e
}

// lockContext takes e's lock, or fails once ctx ends.
func (e *cachedListing) lockContext(ctx context.Context) error {
	select {
	case e.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (e *cachedListing) unlock() { <-e.lock }

// fresh returns e's listing, or the error of reading it, when it was
// read less than listingTTL ago of the location at version.
func (c *listingCache) fresh(e *cachedListing, version string) (locationListing, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.version == "" || e.version != version || c.now().Sub(e.at) >= listingTTL {
		return locationListing{}, false, nil
	}
	return e.listing, true, e.err
}

// keep remembers l, or err, as e's listing of the location at version,
// making room for it by forgetting others; one that cannot fit is not
// kept.
func (c *listingCache) keep(e *cachedListing, version string, l locationListing, err error) {
	backups, bytes := len(l.backups), l.footprint()
	if err != nil {
		bytes += len(err.Error())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clear(e)
	if e.forgotten || backups > c.maxBackups || bytes > c.maxBytes {
		return
	}
	for c.backups+backups > c.maxBackups || c.bytes+bytes > c.maxBytes {
		c.clear(c.victim())
	}
	e.version, e.at, e.listing, e.err, e.backups, e.bytes = version, c.now(), l, err, backups, bytes
	c.backups += backups
	c.bytes += bytes
}

// victim is the entry to forget first: the one read longest ago among
// those that hold a listing, stale or not (the stale were read earlier).
// c.mu is held; some entry holds a listing.
func (c *listingCache) victim() *cachedListing {
	var oldest *cachedListing
	for _, e := range c.entries {
		if e.version != "" && (oldest == nil || e.at.Before(oldest.at)) {
			oldest = e
		}
	}
	return oldest
}

// clear forgets e's listing. c.mu is held.
func (c *listingCache) clear(e *cachedListing) {
	c.backups -= e.backups
	c.bytes -= e.bytes
	e.version, e.at, e.listing, e.err, e.backups, e.bytes = "", time.Time{}, locationListing{}, nil, 0, 0
}

// forgetStale drops the entries whose listings are older than listingTTL
// (or that hold none) and that no request reads: those of deleted
// locations go with them. c.mu is held.
func (c *listingCache) forgetStale() {
	for id, e := range c.entries {
		select {
		case e.lock <- struct{}{}:
			if e.version == "" || c.now().Sub(e.at) >= listingTTL {
				c.clear(e)
				e.forgotten = true
				delete(c.entries, id)
			}
			<-e.lock
		default:
		}
	}
}
