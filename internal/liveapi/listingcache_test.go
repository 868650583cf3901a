package liveapi

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// backupsOf is a listing of n backups whose keys are keyBytes long.
func backupsOf(n, keyBytes int) locationListing {
	l := locationListing{}
	for i := range n {
		key := strconv.Itoa(i)
		l.backups = append(l.backups, backupstore.StoredBackup{Key: key + strings.Repeat("k", max(0, keyBytes-len(key)))})
	}
	return l
}

// TestListingCacheBounds keeps listings of locations in turn, a second
// apart, and checks which the cache still serves.
func TestListingCacheBounds(t *testing.T) {
	type kept struct {
		location string
		listing  locationListing
	}
	small := backupsOf(1, 10)
	for _, tc := range []struct {
		name       string
		maxBackups int
		maxBytes   int
		keep       []kept
		fresh      []string
	}{
		{"all fit", 10, 1 << 20, []kept{{"a", backupsOf(3, 10)}, {"b", backupsOf(3, 10)}}, []string{"a", "b"}},
		{"the oldest goes for a new one", 5, 1 << 20, []kept{{"a", backupsOf(3, 10)}, {"b", backupsOf(1, 10)}, {"c", backupsOf(2, 10)}}, []string{"b", "c"}},
		{"as many go as it takes", 5, 1 << 20, []kept{{"a", small}, {"b", small}, {"c", small}, {"d", backupsOf(5, 10)}}, []string{"d"}},
		{"bytes count as well", 100, 3 * backupsOf(1, 1000).footprint(), []kept{{"a", backupsOf(1, 1000)}, {"b", backupsOf(1, 1000)}, {"c", backupsOf(1, 1000)}, {"d", backupsOf(1, 1000)}}, []string{"b", "c", "d"}},
		{"a listing larger than the bounds is not kept", 5, 1 << 20, []kept{{"a", small}, {"b", backupsOf(6, 10)}}, []string{"a"}},
		{"a location read again replaces its listing", 4, 1 << 20, []kept{{"a", backupsOf(3, 10)}, {"b", small}, {"a", backupsOf(2, 10)}, {"c", small}}, []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newListingCache(tc.maxBackups, tc.maxBytes)
			now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			c.now = func() time.Time { return now }
			for _, k := range tc.keep {
				c.keep(c.entry(k.location), "1", k.listing, nil)
				now = now.Add(time.Second)
				if c.backups > tc.maxBackups || c.bytes > tc.maxBytes {
					t.Fatalf("after %s: %d backups, %d bytes held", k.location, c.backups, c.bytes)
				}
			}
			var fresh []string
			backups := 0
			for _, id := range []string{"a", "b", "c", "d"} {
				if l, ok, _ := c.fresh(c.entry(id), "1"); ok {
					fresh = append(fresh, id)
					backups += len(l.backups)
				}
			}
			if strings.Join(fresh, ",") != strings.Join(tc.fresh, ",") || backups != c.backups {
				t.Errorf("serves %v (%d backups, %d counted); want %v", fresh, backups, c.backups, tc.fresh)
			}
		})
	}
}

// TestListingCacheFreshness: a listing is served for listingTTL, of the
// location's version it was read at.
func TestListingCacheFreshness(t *testing.T) {
	c := newListingCache(10, 1<<20)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.now = func() time.Time { return now }
	e := c.entry("a")
	if _, ok, _ := c.fresh(e, ""); ok {
		t.Error("an entry never read serves a listing")
	}
	c.keep(e, "7", backupsOf(2, 10), nil)
	if _, ok, _ := c.fresh(e, "8"); ok {
		t.Error("a listing is served for another version of its location")
	}
	now = now.Add(listingTTL - time.Millisecond)
	if l, ok, _ := c.fresh(e, "7"); !ok || len(l.backups) != 2 {
		t.Error("a listing younger than listingTTL is not served")
	}
	now = now.Add(time.Millisecond)
	if _, ok, _ := c.fresh(e, "7"); ok {
		t.Error("a listing of listingTTL is served")
	}
	// A failure is remembered as long.
	c.keep(e, "7", locationListing{}, errors.New("the storage did not answer"))
	if _, ok, err := c.fresh(e, "7"); !ok || err == nil {
		t.Errorf("a failure just kept: served %v, error %v", ok, err)
	}
	now = now.Add(listingTTL)
	if _, ok, _ := c.fresh(e, "7"); ok {
		t.Error("a failure of listingTTL is served")
	}
}

// TestListingCacheForgetsStaleEntries: past forgetAtEntries locations, a
// new one makes the cache drop the entries of stale listings, which no
// longer count, and a request still holding one keeps nothing in it.
func TestListingCacheForgetsStaleEntries(t *testing.T) {
	c := newListingCache(1_000_000, 1<<30)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.now = func() time.Time { return now }
	held := c.entry("held")
	for i := range forgetAtEntries - 1 {
		c.keep(c.entry(strconv.Itoa(i)), "1", backupsOf(1, 10), nil)
	}
	now = now.Add(listingTTL)
	c.entry("new")
	if len(c.entries) != 1 || c.backups != 0 || c.bytes != 0 {
		t.Errorf("%d entries, %d backups, %d bytes left; want the new entry alone", len(c.entries), c.backups, c.bytes)
	}
	c.keep(held, "1", backupsOf(1, 10), nil)
	if c.backups != 0 {
		t.Errorf("a forgotten entry kept a listing: %d backups counted", c.backups)
	}
}
