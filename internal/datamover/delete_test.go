package datamover

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// TestDelete deletes backups from both stores: only the backup's own
// objects go, and deleting again, or deleting what never was, succeeds.
func TestDelete(t *testing.T) {
	source, _ := sampleData(t)
	inBothStores(t, func(t *testing.T, s backupstore.Store) {
		ctx := context.Background()
		for key, c := range map[string]backupstore.Compression{
			"team-a/echo/b1": backupstore.CompressionGzip, "team-a/echo/b1x": backupstore.CompressionNone, "team-a/echo/b2": backupstore.CompressionNone,
		} {
			if _, err := Backup(ctx, BackupOptions{DataDir: source, Store: s, Key: key, Compression: c}); err != nil {
				t.Fatal(err)
			}
		}
		for range 2 {
			if err := Delete(ctx, DeleteOptions{Store: s, Key: "team-a/echo/b1"}); err != nil {
				t.Fatalf("Delete: %v", err)
			}
		}
		if err := Delete(ctx, DeleteOptions{Store: s, Key: "team-a/echo/never"}); err != nil {
			t.Errorf("deleting a backup that never was: %v", err)
		}
		got := storedKeys(t, s, "")
		want := []string{"team-a/echo/b1x/data.tar", "team-a/echo/b1x/manifest.json", "team-a/echo/b2/data.tar", "team-a/echo/b2/manifest.json"}
		if !slices.Equal(got, want) {
			t.Errorf("store holds %v, want %v", got, want)
		}
	})
}

// TestDeleteManifestFirst interrupts a deletion after its first object: the
// manifest is gone, so the rest is not taken for a complete backup, and a
// second run completes the deletion.
func TestDeleteManifestFirst(t *testing.T) {
	ctx := context.Background()
	source, _ := sampleData(t)
	fsStore := newFSStore(t)
	if _, err := Backup(ctx, BackupOptions{DataDir: source, Store: fsStore, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("storage went away")
	s := &failingDeleteStore{Store: fsStore, failAt: 1, err: boom}
	if err := Delete(ctx, DeleteOptions{Store: s, Key: "k"}); !errors.Is(err, boom) {
		t.Fatalf("Delete = %v, want the store's error", err)
	}
	if s.deletes[0] != backupstore.ManifestKey("k") {
		t.Errorf("deleted %v: the manifest is not first", s.deletes)
	}
	if got := storedKeys(t, fsStore, ""); !slices.Equal(got, []string{backupstore.ArchiveKey("k", backupstore.CompressionGzip)}) {
		t.Errorf("after an interrupted deletion the store holds %v, want the archive alone", got)
	}
	if _, err := Restore(ctx, RestoreOptions{DataDir: t.TempDir(), Store: fsStore, Key: "k"}); !errors.Is(err, backupstore.ErrNotFound) {
		t.Errorf("restoring a half-deleted backup = %v, want ErrNotFound", err)
	}
	if err := Delete(ctx, DeleteOptions{Store: fsStore, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if got := storedKeys(t, fsStore, ""); len(got) != 0 {
		t.Errorf("store holds %v", got)
	}
}

// TestDeleteFSLeftovers: the filesystem store's key directory goes with
// the temporary files of interrupted writes, but nothing that is not the
// backup's.
func TestDeleteFSLeftovers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := backupstore.NewFSStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{
		"a/clean/manifest.json":                   "{}",
		"a/clean/data.tar.gz":                     "archive",
		"a/clean/.data.tar.gz.tmp-0123456789abcd": "partial",
		"a/kept/manifest.json":                    "{}",
		"a/kept/notes.txt":                        "not the backup's",
		"a/kept/.notes.txt.tmp-0123456789abcd":    "not the backup's either",
		"a/file":                                  "a key that is a file",
	})
	for _, key := range []string{"a/clean", "a/kept", "a/file"} {
		if err := Delete(ctx, DeleteOptions{Store: s, Key: key}); err != nil {
			t.Fatalf("Delete(%s): %v", key, err)
		}
	}
	got := readTree(t, dir)
	for _, gone := range []string{"a/clean", "a/kept/manifest.json"} {
		if _, ok := got[gone]; ok {
			t.Errorf("%s is still there", gone)
		}
	}
	for _, kept := range []string{"a/kept/notes.txt", "a/kept/.notes.txt.tmp-0123456789abcd", "a/file"} {
		if _, ok := got[kept]; !ok {
			t.Errorf("%s was deleted", kept)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err != nil {
		t.Errorf("the parent of the keys went: %v", err)
	}
}

func TestDeleteValidates(t *testing.T) {
	ctx := context.Background()
	if err := Delete(ctx, DeleteOptions{Key: "k"}); !errors.Is(err, backupstore.ErrInvalidArgument) {
		t.Errorf("Delete without a store = %v", err)
	}
	for _, key := range []string{"", "../k", "/k"} {
		if err := Delete(ctx, DeleteOptions{Store: newFSStore(t), Key: key}); !errors.Is(err, backupstore.ErrInvalidArgument) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidArgument", key, err)
		}
	}
}

// failingDeleteStore records deletions and fails the one numbered failAt
// (from 0).
type failingDeleteStore struct {
	backupstore.Store
	failAt  int
	err     error
	deletes []string
}

func (s *failingDeleteStore) Delete(ctx context.Context, key string) error {
	s.deletes = append(s.deletes, key)
	if len(s.deletes)-1 == s.failAt {
		return s.err
	}
	return s.Store.Delete(ctx, key)
}

func storedKeys(t *testing.T, s backupstore.Store, prefix string) []string {
	t.Helper()
	objs, err := s.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{}
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}
