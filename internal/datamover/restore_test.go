package datamover

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

// existingData is what restore targets hold before a restore.
var existingData = map[string]string{
	"journal/old.jsonl": "{\"seq\":1}\n",
	"keep.txt":          "old data",
}

// assertUntouched fails unless dir holds exactly want: no data moved
// aside, nothing restored and no staging directory left.
func assertUntouched(t *testing.T, dir string, want map[string]treeEntry) {
	t.Helper()
	if d := diffTrees(want, readTree(t, dir)); d != "" {
		t.Errorf("target changed by a failed restore:\n%s", d)
	}
}

func TestRestoreRejects(t *testing.T) {
	ok := []craftEntry{
		{Name: "data/journal/", Type: tar.TypeDir, Mode: 0o750},
		{Name: "data/journal/echo-0.jsonl", Data: "{\"seq\":1}\n"},
	}
	with := func(extra ...craftEntry) []craftEntry { return append(append([]craftEntry{}, ok...), extra...) }
	cases := []struct {
		name    string
		entries []craftEntry
		mutate  func(*backupstore.Manifest)
		tamper  func(t *testing.T, s *backupstore.FSStore, key string)
		want    error
	}{
		{name: "unknown format version", entries: ok, mutate: func(m *backupstore.Manifest) { m.FormatVersion = 2 }, want: backupstore.ErrUnknownFormat},
		{name: "traversal in the archive", entries: with(craftEntry{Name: "data/../../evil", Data: "x", Unlisted: true}), want: backupstore.ErrUnsafePath},
		{name: "traversal listed in the manifest", entries: with(craftEntry{Name: "data/../../evil", Data: "x"}), want: backupstore.ErrUnsafePath},
		{name: "absolute path", entries: with(craftEntry{Name: "/tmp/evil", Data: "x", Unlisted: true}), want: backupstore.ErrUnsafePath},
		{name: "outside data", entries: with(craftEntry{Name: "evil", Data: "x", Unlisted: true}), want: backupstore.ErrUnsafePath},
		{name: "symlink", entries: with(craftEntry{Name: "data/link", Type: tar.TypeSymlink, Linkname: "/etc/passwd", Unlisted: true}), want: backupstore.ErrUnsafePath},
		{name: "symlink then write through it", entries: with(
			craftEntry{Name: "data/out", Type: tar.TypeSymlink, Linkname: "../..", Unlisted: true},
			craftEntry{Name: "data/out/evil", Data: "x"}), want: backupstore.ErrUnsafePath},
		{name: "hard link", entries: with(craftEntry{Name: "data/hard", Type: tar.TypeLink, Linkname: "data/journal/echo-0.jsonl", Unlisted: true}), want: backupstore.ErrUnsafePath},
		{name: "device", entries: with(craftEntry{Name: "data/dev", Type: tar.TypeChar, Unlisted: true}), want: backupstore.ErrUnsafePath},
		{name: "fifo", entries: with(craftEntry{Name: "data/fifo", Type: tar.TypeFifo, Unlisted: true}), want: backupstore.ErrUnsafePath},
		{name: "file not in the manifest", entries: with(craftEntry{Name: "data/extra", Data: "x", Unlisted: true}), want: backupstore.ErrChecksumMismatch},
		{name: "file missing from the archive", entries: ok, mutate: func(m *backupstore.Manifest) {
			m.Files = append(m.Files, backupstore.File{Path: "data/missing", Size: 1, Mode: 0o640, SHA256: strings.Repeat("0", 64)})
		}, want: backupstore.ErrChecksumMismatch},
		{name: "directory missing from the archive", entries: ok, mutate: func(m *backupstore.Manifest) {
			m.Directories = append(m.Directories, backupstore.Directory{Path: "data/gone", Mode: 0o750})
		}, want: backupstore.ErrChecksumMismatch},
		{name: "file content differs", entries: ok, mutate: func(m *backupstore.Manifest) { m.Files[1].SHA256 = strings.Repeat("1", 64) }, want: backupstore.ErrChecksumMismatch},
		{name: "file size differs", entries: ok, mutate: func(m *backupstore.Manifest) { m.Files[1].Size++ }, want: backupstore.ErrChecksumMismatch},
		{name: "duplicate entry", entries: with(craftEntry{Name: "data/journal/echo-0.jsonl", Data: "{\"seq\":1}\n", Unlisted: true}), want: backupstore.ErrChecksumMismatch},
		{name: "config differs from the manifest", entries: ok, mutate: func(m *backupstore.Manifest) { m.Config = []byte(`{"other":true}`) }, want: backupstore.ErrChecksumMismatch},
		{name: "archive checksum differs", entries: ok, mutate: func(m *backupstore.Manifest) { m.Archive.SHA256 = strings.Repeat("2", 64) }, want: backupstore.ErrChecksumMismatch},
		{name: "corrupted byte", entries: ok, tamper: func(t *testing.T, s *backupstore.FSStore, key string) {
			b := storetest.GetBytes(t, s, key)
			b[len(b)/2] ^= 0xff
			storetest.PutBytes(t, s, key, b)
		}, want: backupstore.ErrChecksumMismatch},
		{name: "truncated", entries: ok, tamper: func(t *testing.T, s *backupstore.FSStore, key string) {
			b := storetest.GetBytes(t, s, key)
			storetest.PutBytes(t, s, key, b[:len(b)-20])
		}, want: backupstore.ErrChecksumMismatch},
		{name: "archive missing", entries: ok, tamper: func(t *testing.T, s *backupstore.FSStore, key string) {
			if err := s.Delete(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}, want: backupstore.ErrNotFound},
		{name: "not a gzip stream", entries: ok, tamper: func(t *testing.T, s *backupstore.FSStore, key string) {
			storetest.PutBytes(t, s, key, []byte("this is not gzip at all"))
		}, want: backupstore.ErrChecksumMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			parent := t.TempDir()
			target := filepath.Join(parent, "target")
			writeTree(t, target, existingData)
			before := readTree(t, target)
			store := newFSStore(t)
			craftBackup(t, store, "k", backupstore.CompressionGzip, c.entries, c.mutate)
			if c.tamper != nil {
				c.tamper(t, store, backupstore.ArchiveKey("k", backupstore.CompressionGzip))
			}
			_, err := Restore(ctx, RestoreOptions{DataDir: target, Store: store, Key: "k", ExistingData: ExistingDataReplace})
			if !errors.Is(err, c.want) {
				t.Fatalf("Restore = %v, want %v", err, c.want)
			}
			t.Log(err)
			if backupstore.Retryable(err) {
				t.Errorf("%v is retryable", err)
			}
			assertUntouched(t, target, before)
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("restore wrote next to the target: %v", entries)
			}
		})
	}
}

// A truncated archive that matches its (equally truncated) manifest cannot
// be decoded: ErrCorruptArchive.
func TestRestoreUndecodableArchive(t *testing.T) {
	store := newFSStore(t)
	key := backupstore.ArchiveKey("k", backupstore.CompressionGzip)
	m := craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: strings.Repeat("data ", 1000)}}, nil)
	b := storetest.GetBytes(t, store, key)
	b = b[:len(b)-10]
	storetest.PutBytes(t, store, key, b)
	m.Archive.Size = int64(len(b))
	m.Archive.SHA256 = sha256Hex(b)
	encoded, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	storetest.PutBytes(t, store, backupstore.ManifestKey("k"), encoded)
	target := t.TempDir()
	_, err = Restore(context.Background(), RestoreOptions{DataDir: target, Store: store, Key: "k"})
	if !errors.Is(err, backupstore.ErrCorruptArchive) {
		t.Fatalf("Restore = %v, want ErrCorruptArchive", err)
	}
	assertUntouched(t, target, map[string]treeEntry{})
}

func TestRestoreFailsBeforeDownloadingIntoData(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: newFSStore(t)}
	craftBackup(t, store.Store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "new"}}, nil)
	target := t.TempDir()
	writeTree(t, target, existingData)
	before := readTree(t, target)
	_, err := Restore(ctx, RestoreOptions{DataDir: target, Store: store, Key: "k"}) // default policy: Fail
	if !errors.Is(err, backupstore.ErrTargetNotEmpty) || backupstore.Retryable(err) {
		t.Fatalf("Restore = %v, want ErrTargetNotEmpty", err)
	}
	if !strings.Contains(err.Error(), `"journal"`) || !strings.Contains(err.Error(), "Replace") {
		t.Errorf("error %q should name what is in the way and the way out", err)
	}
	if strings.Join(store.gets, ",") != backupstore.ManifestKey("k") {
		t.Errorf("Restore read %v; want only the manifest", store.gets)
	}
	assertUntouched(t, target, before)
}

func TestRestoreReplaceKeepsOldData(t *testing.T) {
	ctx := context.Background()
	store := newFSStore(t)
	craftBackup(t, store, "k", backupstore.CompressionNone, []craftEntry{
		{Name: "data/journal/", Type: tar.TypeDir, Mode: 0o750},
		{Name: "data/journal/new.jsonl", Data: "{\"seq\":9}\n"},
	}, nil)
	target := t.TempDir()
	writeTree(t, target, existingData)
	writeTree(t, target, map[string]string{lostAndFound + "/x": "fsck"})
	old := readTree(t, target)
	now := time.Date(2026, 7, 8, 9, 10, 11, 0, time.UTC)
	opts := RestoreOptions{DataDir: target, Store: store, Key: "k", ExistingData: ExistingDataReplace, Now: func() time.Time { return now }}
	if _, err := Restore(ctx, opts); err != nil {
		t.Fatal(err)
	}
	got := readTree(t, target)
	aside := preRestorePrefix + "20260708T091011Z"
	for name, e := range old {
		if strings.HasPrefix(name, lostAndFound) {
			if got[name] != e {
				t.Errorf("%s was moved or changed", name)
			}
			continue
		}
		if got[aside+"/"+name] != e {
			t.Errorf("old %s is not kept in %s", name, aside)
		}
		if _, ok := got[name]; ok && name != "journal" {
			t.Errorf("old %s is still in place", name)
		}
	}
	if got["journal/new.jsonl"].Data != "{\"seq\":9}\n" {
		t.Errorf("restored journal = %q", got["journal/new.jsonl"].Data)
	}
	if _, ok := got["journal/old.jsonl"]; ok {
		t.Error("old journal file mixed into the restored journal directory")
	}

	// A second Replace in the same second keeps both generations of old
	// data, and a Fail restore ignores what the mover set aside.
	if _, err := Restore(ctx, opts); err != nil {
		t.Fatal(err)
	}
	got = readTree(t, target)
	if got[aside+"/keep.txt"].Data != "old data" || got[aside+"-1/journal/new.jsonl"].Data != "{\"seq\":9}\n" {
		t.Errorf("pre-restore directories hold %v", got)
	}
}

func TestRestoreIgnoresMoverEntries(t *testing.T) {
	ctx := context.Background()
	store := newFSStore(t)
	craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "new"}}, nil)
	target := t.TempDir()
	writeTree(t, target, map[string]string{
		lostAndFound + "/":            "",
		preRestorePrefix + "x/old":    "kept",
		stagingPrefix + "dead/data/f": "stale",
	})
	if _, err := Restore(ctx, RestoreOptions{DataDir: target, Store: store, Key: "k"}); err != nil {
		t.Fatalf("Restore into a target holding only the mover's entries: %v", err)
	}
	got := readTree(t, target)
	if got["f"].Data != "new" || got[preRestorePrefix+"x/old"].Data != "kept" {
		t.Errorf("target = %v", got)
	}
	for name := range got {
		if strings.HasPrefix(name, stagingPrefix) {
			t.Errorf("staging directory %s left behind", name)
		}
	}
}

func TestRestoreMissingBackup(t *testing.T) {
	_, err := Restore(context.Background(), RestoreOptions{DataDir: t.TempDir(), Store: newFSStore(t), Key: "nothing"})
	if !errors.Is(err, backupstore.ErrNotFound) || backupstore.Retryable(err) {
		t.Fatalf("Restore = %v, want ErrNotFound", err)
	}
}

func TestRestoreRejectsBadOptions(t *testing.T) {
	store := newFSStore(t)
	for name, o := range map[string]RestoreOptions{
		"no store":   {DataDir: t.TempDir(), Key: "k"},
		"bad key":    {DataDir: t.TempDir(), Store: store, Key: "/k"},
		"no dir":     {Store: store, Key: "k"},
		"bad policy": {DataDir: t.TempDir(), Store: store, Key: "k", ExistingData: "Merge"},
	} {
		if _, err := Restore(context.Background(), o); !errors.Is(err, backupstore.ErrInvalidArgument) {
			t.Errorf("%s: Restore = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// The space check refuses a backup that cannot fit before downloading it.
func TestRestoreNoSpaceUpFront(t *testing.T) {
	target := storetest.MountTmpfs(t, "size=1m")
	store := &countingStore{Store: newFSStore(t)}
	craftBackup(t, store.Store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/big", Data: strings.Repeat("x", 2<<20)}}, nil)
	_, err := Restore(context.Background(), RestoreOptions{DataDir: target, Store: store, Key: "k"})
	if !errors.Is(err, backupstore.ErrNoSpace) || backupstore.Retryable(err) {
		t.Fatalf("Restore = %v, want ErrNoSpace", err)
	}
	if len(store.gets) != 1 {
		t.Errorf("Restore read %v; want only the manifest", store.gets)
	}
	assertUntouched(t, target, map[string]treeEntry{})
}

// A disk that fills up while files are written (here: out of inodes, which
// the space check does not foresee) fails the restore with ErrNoSpace and
// leaves the target as it was.
func TestRestoreNoSpaceWhileWriting(t *testing.T) {
	target := storetest.MountTmpfs(t, "size=4m,nr_inodes=32")
	writeTree(t, target, map[string]string{"keep.txt": "old data"})
	before := readTree(t, target)
	var entries []craftEntry
	for i := range 64 {
		entries = append(entries, craftEntry{Name: fmt.Sprintf("data/f%03d", i), Data: "small"})
	}
	store := newFSStore(t)
	craftBackup(t, store, "k", backupstore.CompressionGzip, entries, nil)
	_, err := Restore(context.Background(), RestoreOptions{DataDir: target, Store: store, Key: "k", ExistingData: ExistingDataReplace})
	if !errors.Is(err, backupstore.ErrNoSpace) || backupstore.Retryable(err) {
		t.Fatalf("Restore = %v, want ErrNoSpace", err)
	}
	assertUntouched(t, target, before)
}

func TestRestoreCancelled(t *testing.T) {
	store := newFSStore(t)
	craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "x"}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	target := t.TempDir()
	_, err := Restore(ctx, RestoreOptions{DataDir: target, Store: store, Key: "k"})
	if !errors.Is(err, context.Canceled) || backupstore.Retryable(err) {
		t.Fatalf("Restore = %v, want context.Canceled", err)
	}
	assertUntouched(t, target, map[string]treeEntry{})
}

func TestRenameNoReplace(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a": "a", "b": "b", "d/": ""})
	if err := renameNoReplace(filepath.Join(dir, "a"), filepath.Join(dir, "b")); !errors.Is(err, os.ErrExist) {
		t.Errorf("rename over a file = %v, want ErrExist", err)
	}
	if err := renameNoReplace(filepath.Join(dir, "a"), filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	if got := readTree(t, dir); got["b"].Data != "b" || got["c"].Data != "a" {
		t.Errorf("tree = %v", got)
	}
}

func sha256Hex(b []byte) string {
	h := newHashCounter()
	_, _ = h.Write(b)
	return h.sum()
}

// A swap that fails halfway puts everything back: the old data in place, no
// pre-restore directory, the staged entries in staging.
func TestRestoreSwapRollsBack(t *testing.T) {
	target := filepath.Join(t.TempDir(), "target")
	writeTree(t, target, existingData)
	before := readTree(t, target)
	staging := filepath.Join(target, stagingPrefix+"test")
	staged := filepath.Join(staging, "data")
	writeTree(t, staged, map[string]string{"a": "new a", "z": "new z"})
	// An immutable file cannot be renamed, so the swap fails at z, after a
	// and the old data have moved.
	immutable := filepath.Join(staged, "z")
	if out, err := exec.Command("chattr", "+i", immutable).CombinedOutput(); err != nil {
		t.Skipf("cannot make a file immutable here (chattr +i needs root and ext4 or similar): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("chattr", "-i", immutable).CombinedOutput(); err != nil {
			t.Errorf("chattr -i: %v: %s", err, out)
		}
	})
	r, err := newRestore(RestoreOptions{DataDir: target, Store: newFSStore(t), Key: "k", ExistingData: ExistingDataReplace})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.swap(staged); err == nil {
		t.Fatal("swap succeeded despite an immovable entry")
	}
	got := readTree(t, target)
	for name := range got {
		if strings.HasPrefix(name, stagingPrefix) {
			delete(got, name)
		}
	}
	if d := diffTrees(before, got); d != "" {
		t.Errorf("target after a failed swap:\n%q", d)
	}
	if names, _ := readDirNames(staged); strings.Join(names, ",") != "a,z" {
		t.Errorf("staging holds %v, want a and z back", names)
	}
}

// A target that did not exist is not left behind by a failed restore.
func TestRestoreRemovesTargetItCreated(t *testing.T) {
	store := newFSStore(t)
	craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "x"}}, func(m *backupstore.Manifest) {
		m.Files[1].SHA256 = strings.Repeat("3", 64)
	})
	target := filepath.Join(t.TempDir(), "new")
	if _, err := Restore(context.Background(), RestoreOptions{DataDir: target, Store: store, Key: "k"}); !errors.Is(err, backupstore.ErrChecksumMismatch) {
		t.Fatalf("Restore = %v", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the target created by the failed restore is still there: %v", err)
	}
}

func TestParseExistingDataPolicy(t *testing.T) {
	for in, want := range map[string]ExistingDataPolicy{"": ExistingDataFail, "Fail": ExistingDataFail, "Replace": ExistingDataReplace} {
		if got, err := ParseExistingDataPolicy(in); err != nil || got != want {
			t.Errorf("ParseExistingDataPolicy(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseExistingDataPolicy("replace"); !errors.Is(err, backupstore.ErrInvalidArgument) {
		t.Errorf("ParseExistingDataPolicy(replace) error = %v", err)
	}
}
