package datamover

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/echoserver"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

// sampleData is a data directory with journals (one with a torn last line),
// a less compressible file, nested and empty directories, modes other than
// the defaults, and entries a backup must leave out.
func sampleData(t *testing.T) (dir string, want map[string]treeEntry) {
	t.Helper()
	dir = t.TempDir()
	rnd := rand.New(rand.NewPCG(1, 2))
	blob := make([]byte, 3<<20+17)
	for i := range blob {
		blob[i] = byte(rnd.Uint32())
	}
	writeTree(t, dir, map[string]string{
		"journal/echo-0.jsonl":        "{\"seq\":1}\n{\"seq\":2}\n",
		"journal/echo-1.jsonl":        "{\"seq\":1}\n{\"seq\":2,\"torn\"",
		"journal/no-newline.jsonl":    "{\"seq\":1",
		"blobs/a/b/c/blob.bin":        string(blob),
		"empty/":                      "",
		"private.txt":                 "secret-ish",
		"notes.txt":                   "",
		lostAndFound + "/x":           "fsck",
		preRestorePrefix + "old/f":    "older data",
		stagingPrefix + "dead/data/f": "stale",
	})
	if err := os.Chmod(filepath.Join(dir, "private.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("private.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	want = readTree(t, dir)
	for name := range want {
		top := strings.SplitN(name, "/", 2)[0]
		if isMoverEntry(top) || name == "link" {
			delete(want, name)
		}
	}
	f := want["journal/echo-1.jsonl"]
	f.Data = "{\"seq\":1}\n"
	want["journal/echo-1.jsonl"] = f
	f = want["journal/no-newline.jsonl"]
	f.Data = ""
	want["journal/no-newline.jsonl"] = f
	return dir, want
}

func TestBackupRestoreRoundTrip(t *testing.T) {
	for _, c := range []backupstore.Compression{backupstore.CompressionGzip, backupstore.CompressionNone} {
		t.Run(string(c), func(t *testing.T) {
			ctx := context.Background()
			src, want := sampleData(t)
			store := newFSStore(t)
			config := json.RawMessage(`{ "echo": {"spec": {"replicas": 2}}, "release": {"chartVersion": "0.1.0"} }`)
			source := backupstore.Source{Namespace: "team-a", Name: "echo", UID: "u-1", Generation: 4}
			now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
			m, err := Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "team-a/echo/b1", Compression: c,
				Config: config, Source: source, Now: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if m.FormatVersion != 1 || m.Source != source || !m.CreatedAt.Equal(now) || m.Compression != c {
				t.Errorf("manifest header = %+v", m)
			}
			if string(m.Config) != `{"echo":{"spec":{"replicas":2}},"release":{"chartVersion":"0.1.0"}}` {
				t.Errorf("config = %s", m.Config)
			}
			wantFiles := []string{backupstore.ConfigName, "data/blobs/a/b/c/blob.bin", "data/journal/echo-0.jsonl",
				"data/journal/echo-1.jsonl", "data/journal/no-newline.jsonl", "data/notes.txt", "data/private.txt"}
			var gotFiles []string
			for _, f := range m.Files {
				gotFiles = append(gotFiles, f.Path)
			}
			if strings.Join(gotFiles, " ") != strings.Join(wantFiles, " ") {
				t.Errorf("files = %v, want %v", gotFiles, wantFiles)
			}
			if m.DataFiles() != len(wantFiles)-1 {
				t.Errorf("DataFiles = %d", m.DataFiles())
			}
			// The stored objects are what the manifest says.
			archive := storetest.GetBytes(t, store, backupstore.ArchiveKey("team-a/echo/b1", c))
			if int64(len(archive)) != m.Archive.Size {
				t.Errorf("archive is %d bytes, manifest says %d", len(archive), m.Archive.Size)
			}
			stored, err := backupstore.DecodeManifest(bytes.NewReader(storetest.GetBytes(t, store, backupstore.ManifestKey("team-a/echo/b1"))))
			if err != nil || stored.Archive != m.Archive {
				t.Fatalf("stored manifest %+v, %v", stored, err)
			}

			dst := filepath.Join(t.TempDir(), "restored") // created by Restore
			rm, err := Restore(ctx, RestoreOptions{DataDir: dst, Store: store, Key: "team-a/echo/b1"})
			if err != nil {
				t.Fatal(err)
			}
			if rm.Archive != m.Archive || string(rm.Config) != string(m.Config) {
				t.Errorf("Restore returned manifest %+v", rm)
			}
			if d := diffTrees(want, readTree(t, dst)); d != "" {
				t.Errorf("restored tree differs:\n%s", d)
			}
		})
	}
}

func TestBackupRefusesToOverwrite(t *testing.T) {
	ctx := context.Background()
	src, _ := sampleData(t)
	store := newFSStore(t)
	opts := BackupOptions{DataDir: src, Store: store, Key: "k"}
	if _, err := Backup(ctx, opts); err != nil {
		t.Fatal(err)
	}
	before := storetest.GetBytes(t, store, backupstore.ManifestKey("k"))
	_, err := Backup(ctx, opts)
	if !errors.Is(err, backupstore.ErrAlreadyExists) || backupstore.Retryable(err) {
		t.Fatalf("second Backup = %v, want ErrAlreadyExists", err)
	}
	if !bytes.Equal(before, storetest.GetBytes(t, store, backupstore.ManifestKey("k"))) {
		t.Error("the existing manifest changed")
	}
}

// TestBackupRetryFindsItsOwnArtifact: a retry of a backup whose earlier
// attempt stored the artifact but was stopped before it could report it
// returns that artifact; any other backup under the key is still refused.
func TestBackupRetryFindsItsOwnArtifact(t *testing.T) {
	ctx := context.Background()
	src, _ := sampleData(t)
	store := newFSStore(t)
	first, err := Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "k", BackupID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	before := storetest.GetBytes(t, store, backupstore.ManifestKey("k"))
	writeTree(t, src, map[string]string{"added-after-the-first-attempt": "x"})

	retry, err := Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "k", BackupID: "uid-1"})
	if err != nil {
		t.Fatalf("retry of the same backup = %v, want its stored artifact", err)
	}
	if retry.BackupID != "uid-1" || retry.Archive != first.Archive || retry.DataFiles() != first.DataFiles() {
		t.Errorf("retry returned %+v, want the first attempt's artifact %+v", retry.Archive, first.Archive)
	}
	for _, other := range []string{"uid-2", ""} {
		_, err := Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "k", BackupID: other})
		if !errors.Is(err, backupstore.ErrAlreadyExists) {
			t.Errorf("backup %q under another backup's key = %v, want ErrAlreadyExists", other, err)
		}
	}
	if !bytes.Equal(before, storetest.GetBytes(t, store, backupstore.ManifestKey("k"))) {
		t.Error("the stored manifest changed")
	}
}

// TestBackupRetryRefusesAnArtifactWithoutArchive: an artifact of the same
// backup whose archive is gone is no success to report.
func TestBackupRetryRefusesAnArtifactWithoutArchive(t *testing.T) {
	ctx := context.Background()
	src, _ := sampleData(t)
	store := newFSStore(t)
	m, err := Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "k", BackupID: "uid-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(ctx, backupstore.ArchiveKey("k", m.Compression)); err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "k", BackupID: "uid-1"}); !errors.Is(err, backupstore.ErrAlreadyExists) {
		t.Fatalf("retry over a damaged artifact = %v, want ErrAlreadyExists", err)
	}
}

func TestBackupRejectsBadOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeTree(t, dir, map[string]string{"file": "x"})
	store := newFSStore(t)
	cases := map[string]BackupOptions{
		"no store":        {DataDir: dir, Key: "k"},
		"bad key":         {DataDir: dir, Store: store, Key: "../k"},
		"no data dir":     {Store: store, Key: "k"},
		"missing dir":     {DataDir: filepath.Join(dir, "missing"), Store: store, Key: "k"},
		"file as dir":     {DataDir: file, Store: store, Key: "k"},
		"bad config":      {DataDir: dir, Store: store, Key: "k", Config: json.RawMessage(`{"a":`)},
		"bad compression": {DataDir: dir, Store: store, Key: "k", Compression: "zstd"},
	}
	for name, o := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := Backup(ctx, o); !errors.Is(err, backupstore.ErrInvalidArgument) {
				t.Fatalf("Backup = %v, want ErrInvalidArgument", err)
			}
		})
	}
	if objs, _ := store.List(ctx, ""); len(objs) != 0 {
		t.Errorf("failed backups stored %v", objs)
	}
}

// A journal being appended to while the backup runs is captured as whole
// lines only.
func TestBackupOfLiveJournal(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	j, err := echoserver.OpenJournal(src, "echo-0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j.Close() }()
	body := bytes.Repeat([]byte("payload "), 64)
	for range 200 {
		if _, err := j.Append(echoserver.NewEntry("POST", "/warm-up", body, "hello")); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	appended := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				appended <- n
				return
			default:
			}
			if _, err := j.Append(echoserver.NewEntry("POST", "/live", body, "hello")); err != nil {
				appended <- -1
				return
			}
			n++
		}
	}()
	store := newFSStore(t)
	_, err = Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "live"})
	close(stop)
	if n := <-appended; n < 0 {
		t.Fatal("appending failed during the backup")
	}
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if _, err := Restore(ctx, RestoreOptions{DataDir: dst, Store: store, Key: "live"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dst, "journal", "echo-0.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var seq uint64
	for sc.Scan() {
		var e echoserver.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line after seq %d is not a complete entry: %v", seq, err)
		}
		if e.Seq != seq+1 {
			t.Fatalf("seq %d follows %d", e.Seq, seq)
		}
		seq = e.Seq
	}
	if seq < 200 {
		t.Fatalf("restored journal ends at seq %d, want at least the 200 written before the backup", seq)
	}
	// The restored journal opens cleanly: nothing to truncate.
	if j2, err := echoserver.OpenJournal(dst, "echo-0", slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	} else if j2.Seq() != seq {
		t.Errorf("reopened journal at seq %d, want %d", j2.Seq(), seq)
	} else if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
}

// A store that fails mid-upload fails the backup with the store's error,
// and the producer stops.
func TestBackupStoreFailure(t *testing.T) {
	src, _ := sampleData(t)
	boom := backupstore.WithKind(backupstore.ErrUnavailable, errors.New("connection reset"))
	store := &failingStore{Store: newFSStore(t), failAfter: 1000, err: boom}
	_, err := Backup(context.Background(), BackupOptions{DataDir: src, Store: store, Key: "k"})
	if !errors.Is(err, boom) || !backupstore.Retryable(err) {
		t.Fatalf("Backup = %v, want the store's error", err)
	}
}

// failingStore's Put reads failAfter bytes, then fails with err.
type failingStore struct {
	backupstore.Store
	failAfter int64
	err       error
}

func (f *failingStore) Put(_ context.Context, _ string, r io.Reader) error {
	if _, err := io.CopyN(io.Discard, r, f.failAfter); err != nil {
		return err
	}
	return f.err
}

// A data directory reached through a symlink is backed up, not skipped.
func TestBackupThroughSymlink(t *testing.T) {
	real := t.TempDir()
	writeTree(t, real, map[string]string{"journal/echo-0.jsonl": "{\"seq\":1}\n"})
	link := filepath.Join(t.TempDir(), "data")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	m, err := Backup(context.Background(), BackupOptions{DataDir: link, Store: newFSStore(t), Key: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if m.DataFiles() != 1 {
		t.Errorf("backed up %d files through the symlink, want 1", m.DataFiles())
	}
}

func TestBackupCancelled(t *testing.T) {
	src, _ := sampleData(t)
	store := newFSStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Backup(ctx, BackupOptions{DataDir: src, Store: store, Key: "k"})
	if !errors.Is(err, context.Canceled) || backupstore.Retryable(err) {
		t.Fatalf("Backup = %v, want context.Canceled", err)
	}
	if objs, _ := store.List(context.Background(), ""); len(objs) != 0 {
		t.Errorf("a cancelled backup stored %v", objs)
	}
}
