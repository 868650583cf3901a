package backupstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/fakes3"
)

// The storage of a listing may be a tenant's: these tests list buckets
// of a fake S3 service that answers with endless or huge listings and
// manifests, or not at all, and check that the listing's bounds hold.

func hostileStore(t *testing.T, srv *fakes3.Server, bucket string) *S3Store {
	t.Helper()
	s, err := NewS3StoreWithCredentials(S3Config{Endpoint: srv.Endpoint, Bucket: bucket, Prefix: "tenant", PathStyle: true, MaxRetries: 1}, "id", "secret")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestListBackupsOfEndlessPages: a listing whose pages say more follow,
// forever, stops after MaxObjects objects (pages of keys) or MaxPages
// pages (empty ones), and says it was cut.
func TestListBackupsOfEndlessPages(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("full-pages", fakes3.EndlessPages(1000))
	srv.Add("empty-pages", fakes3.EndlessPages(0))
	ctx := context.Background()

	listing, err := ListBackups(ctx, hostileStore(t, srv, "full-pages"), ListOptions{MaxObjects: 4000})
	if err != nil {
		t.Fatal(err)
	}
	if !listing.Cut || len(listing.Backups) != 2000 {
		t.Errorf("listed %d backups, cut %v; want the 2,000 of the first 4,000 objects, cut", len(listing.Backups), listing.Cut)
	}
	for _, b := range listing.Backups {
		if b.Problem != "" || b.Files != 1 {
			t.Fatalf("%s: files %d, problem %q", b.Key, b.Files, b.Problem)
		}
	}
	if pages := srv.Stats("full-pages").ListRequests.Load(); pages > 6 {
		t.Errorf("the listing asked for %d pages of 1,000 keys to list 4,000", pages)
	}

	listing, err = ListBackups(ctx, hostileStore(t, srv, "empty-pages"), ListOptions{MaxPages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !listing.Cut || len(listing.Backups) != 0 {
		t.Errorf("listed %d backups, cut %v; want none, cut", len(listing.Backups), listing.Cut)
	}
	if pages := srv.Stats("empty-pages").ListRequests.Load(); pages != 10 {
		t.Errorf("the listing asked for %d pages; want 10, its bound", pages)
	}
}

// TestListBackupsOfHugePages: a page of more keys than S3 sends fails
// the listing at the first key too many; a page larger than
// MaxResponseBytes once that much is read; a page of many things about
// one object within it is read for the object alone.
func TestListBackupsOfHugePages(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("many-keys", fakes3.HugePage(1<<30))
	srv.Add("bloated", fakes3.BloatedPage(1<<30))
	srv.Add("bloated-within", fakes3.BloatedPage(3<<20))
	ctx := context.Background()

	_, err := ListBackups(ctx, hostileStore(t, srv, "many-keys"), ListOptions{})
	if err == nil || !strings.Contains(err.Error(), "a page of more than 1000 objects") {
		t.Errorf("a page of a billion bytes of keys: %v; want a page of too many objects", err)
	}
	if sent := srv.Stats("many-keys").BytesSent.Load(); sent > 32<<20 {
		t.Errorf("the server sent %d MiB of a 1 GiB page", sent>>20)
	}

	_, err = ListBackups(ctx, hostileStore(t, srv, "bloated"), ListOptions{MaxResponseBytes: 1 << 20})
	var tooLarge *ResponseTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Limit != 1<<20 {
		t.Errorf("a page of a billion bytes about one object: %v; want a response too large", err)
	}
	if sent := srv.Stats("bloated").BytesSent.Load(); sent > 32<<20 {
		t.Errorf("the server sent %d MiB of a 1 GiB page", sent>>20)
	}

	listing, err := ListBackups(ctx, hostileStore(t, srv, "bloated-within"), ListOptions{})
	if err != nil || len(listing.Backups) != 1 {
		t.Errorf("a page of 3 MiB about one manifest: %+v, %v; want its backup", listing, err)
	}
}

// TestListBackupsOfHugeManifests: manifests of 256 MiB whose summary
// comes after their files are read up to ManifestBytes each, and listed
// with a problem that says why; the listing goes on.
func TestListBackupsOfHugeManifests(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("huge", fakes3.HugeManifests(3, 256<<20))
	listing, err := ListBackups(context.Background(), hostileStore(t, srv, "huge"), ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(listing.Backups) != 3 || listing.Cut {
		t.Fatalf("listed %+v", listing)
	}
	for _, b := range listing.Backups {
		if !strings.Contains(b.Problem, "larger than the 1048576 bytes a listing reads") || b.Source.Name != fakes3.BackupEcho {
			t.Errorf("%s: problem %q, source %+v", b.Key, b.Problem, b.Source)
		}
	}
	// What the connections buffered aside, the server sent about 1 MiB of
	// each manifest.
	if sent := srv.Stats("huge").BytesSent.Load(); sent > 3*16<<20 {
		t.Errorf("the server sent %d MiB of three manifests of 256 MiB", sent>>20)
	}
}

// TestListBackupsOfAStorageThatDoesNotAnswer: the listing ends with its
// context.
func TestListBackupsOfAStorageThatDoesNotAnswer(t *testing.T) {
	srv := fakes3.Start(t)
	srv.Add("slow", fakes3.Slow())
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := ListBackups(ctx, hostileStore(t, srv, "slow"), ListOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v; want the context's deadline", err)
	}
}
