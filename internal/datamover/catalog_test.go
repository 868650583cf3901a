package datamover

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

// TestListBackups lists a store holding whole, damaged and foreign
// backups, in a filesystem and in a real S3 server: every backup with a
// manifest is listed, with what its manifest says, and the damaged ones
// with their problem; a second listing reads only new manifests.
func TestListBackups(t *testing.T) {
	source, _ := sampleData(t)
	inBothStores(t, func(t *testing.T, s backupstore.Store) {
		ctx := context.Background()
		for _, key := range []string{"team-a/web/b1", "team-a/web/b2", "team-a/web/no-archive", "team-a/web/resized", "team-a/web/future"} {
			backupForInspect(t, s, source, key, inspectConfig)
		}
		if err := s.Delete(ctx, backupstore.ArchiveKey("team-a/web/no-archive", backupstore.CompressionGzip)); err != nil {
			t.Fatal(err)
		}
		storetest.PutBytes(t, s, backupstore.ArchiveKey("team-a/web/resized", backupstore.CompressionGzip), []byte("short"))
		unknownFormat(t, s, "team-a/web/future")
		// An upload that never finished: an archive without manifest.
		storetest.PutBytes(t, s, backupstore.ArchiveKey("team-a/web/partial", backupstore.CompressionGzip), []byte("partial"))

		counting := &countingStore{Store: s}
		manifests := &backupstore.ManifestCache{}
		listing, err := backupstore.ListBackups(ctx, counting, backupstore.ListOptions{Manifests: manifests, Scope: "team-a/offsite"})
		if err != nil {
			t.Fatal(err)
		}
		got := listing.Backups
		if listing.Cut {
			t.Error("a listing of 11 objects was cut")
		}
		problems := map[string]string{}
		for _, b := range got {
			problems[b.Key] = b.Problem
		}
		want := map[string]string{
			"team-a/web/b1":         "",
			"team-a/web/b2":         "",
			"team-a/web/future":     "unknown backup format",
			"team-a/web/no-archive": "is missing",
			"team-a/web/resized":    "the archive is 5 bytes",
		}
		if len(problems) != len(want) {
			t.Fatalf("listed %v; want %v", problems, want)
		}
		for key, problem := range want {
			got, ok := problems[key]
			if !ok || (problem == "") != (got == "") || !strings.Contains(got, problem) {
				t.Errorf("%s: problem %q; want one containing %q", key, got, problem)
			}
		}
		b1 := got[slices.IndexFunc(got, func(b backupstore.StoredBackup) bool { return b.Key == "team-a/web/b1" })]
		if b1.Source != inspectSource || !b1.CreatedAt.Equal(inspectCreatedAt) || b1.FormatVersion != backupstore.FormatVersion || b1.Files == 0 || b1.ArchiveSize == 0 {
			t.Errorf("b1 = %+v", b1)
		}
		if len(counting.gets) != 5 {
			t.Errorf("the first listing read %v; want the five manifests", counting.gets)
		}

		backupForInspect(t, s, source, "team-a/web/b3", inspectConfig)
		counting.gets = nil
		again, err := backupstore.ListBackups(ctx, counting, backupstore.ListOptions{Manifests: manifests, Scope: "team-a/offsite"})
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Backups) != 6 || !slices.Equal(counting.gets, []string{backupstore.ManifestKey("team-a/web/b3")}) {
			t.Errorf("the second listing found %d backups and read %v; want 6 and the new manifest alone", len(again.Backups), counting.gets)
		}
	})
}

// TestListBackupsStoreErrors: a store that cannot be listed or read is an
// error of the listing, not a problem of a backup.
func TestListBackupsStoreErrors(t *testing.T) {
	srv := s3server.Start(t, testBucket)
	s := newTestS3Store(t, srv, backupstore.S3Config{Prefix: "echo-backups"})
	backupForInspect(t, s, t.TempDir(), "team-a/web/b1", inspectConfig)
	srv.Stop(t)
	if _, err := backupstore.ListBackups(context.Background(), s, backupstore.ListOptions{Manifests: &backupstore.ManifestCache{}}); !errors.Is(err, backupstore.ErrUnavailable) {
		t.Errorf("ListBackups of a stopped server: %v; want ErrUnavailable", err)
	}
}

// TestListBackupsBounds: a listing stops after MaxObjects objects and says
// it was cut; the keys Keep refuses are counted but neither listed nor
// read.
func TestListBackupsBounds(t *testing.T) {
	source, _ := sampleData(t)
	s := newFSStore(t)
	for _, key := range []string{"team-a/web/b1", "team-a/web/b2", "team-a/web/b3"} {
		backupForInspect(t, s, source, key, inspectConfig)
	}
	m := storetest.GetBytes(t, s, backupstore.ManifestKey("team-a/web/b1"))
	if i := bytes.Index(m, []byte(`"dataFiles": 6`)); i < 0 || i > bytes.Index(m, []byte(`"config"`)) {
		t.Errorf("a backup's manifest does not have its summary first:\n%s", m)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		opts      backupstore.ListOptions
		want      []string
		wantCut   bool
		wantReads int
	}{
		{name: "every object", opts: backupstore.ListOptions{MaxObjects: 6}, want: []string{"team-a/web/b1", "team-a/web/b2", "team-a/web/b3"}, wantReads: 3},
		{name: "cut after two backups", opts: backupstore.ListOptions{MaxObjects: 4}, want: []string{"team-a/web/b1", "team-a/web/b2"}, wantCut: true, wantReads: 2},
		{name: "cut between an archive and its manifest", opts: backupstore.ListOptions{MaxObjects: 3}, want: []string{"team-a/web/b1"}, wantCut: true, wantReads: 1},
		{
			name: "kept keys only", opts: backupstore.ListOptions{Keep: func(key string) bool { return key != "team-a/web/b2" }},
			want: []string{"team-a/web/b1", "team-a/web/b3"}, wantReads: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counting := &countingStore{Store: s}
			listing, err := backupstore.ListBackups(ctx, counting, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, b := range listing.Backups {
				keys = append(keys, b.Key)
				if b.Problem != "" {
					t.Errorf("%s: %s", b.Key, b.Problem)
				}
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tc.want) || listing.Cut != tc.wantCut || len(counting.gets) != tc.wantReads {
				t.Errorf("listed %v (cut %v) reading %v; want %v (cut %v) reading %d manifests", keys, listing.Cut, counting.gets, tc.want, tc.wantCut, tc.wantReads)
			}
		})
	}
}

// TestManifestCacheScopes: what one scope read is never used for another,
// even for a manifest of the same key, size and time; a manifest written
// again is read again.
func TestManifestCacheScopes(t *testing.T) {
	source, _ := sampleData(t)
	inBothStores(t, func(t *testing.T, s backupstore.Store) {
		ctx := context.Background()
		backupForInspect(t, s, source, "team-a/web/b1", inspectConfig)
		manifests := &backupstore.ManifestCache{}
		counting := &countingStore{Store: s}
		list := func(scope string) backupstore.StoredBackup {
			t.Helper()
			listing, err := backupstore.ListBackups(ctx, counting, backupstore.ListOptions{Manifests: manifests, Scope: scope})
			if err != nil || len(listing.Backups) != 1 {
				t.Fatalf("listing under %s: %+v, %v", scope, listing, err)
			}
			return listing.Backups[0]
		}
		list("team-a/offsite uid-1 https://s3.example.test")
		list("team-a/offsite uid-1 https://s3.example.test")
		list("team-b/offsite uid-2 https://s3.example.test")
		if len(counting.gets) != 2 {
			t.Errorf("three listings under two scopes read %v; want one read per scope", counting.gets)
		}
		// The same key written again (another time, in S3 another ETag).
		b := storetest.GetBytes(t, s, backupstore.ManifestKey("team-a/web/b1"))
		storetest.PutBytes(t, s, backupstore.ManifestKey("team-a/web/b1"), bytes.Replace(b, []byte(`"namespace": "team-a"`), []byte(`"namespace": "team-c"`), 1))
		if st, err := s.Stat(ctx, backupstore.ManifestKey("team-a/web/b1")); err == nil && st.ETag == "" {
			// A filesystem's time may not have moved: make it.
			later := time.Now().Add(time.Minute)
			if err := os.Chtimes(s.Location(backupstore.ManifestKey("team-a/web/b1")), later, later); err != nil {
				t.Fatal(err)
			}
		}
		if got := list("team-a/offsite uid-1 https://s3.example.test"); got.Source.Namespace != "team-c" {
			t.Errorf("after the manifest changed, the listing says source %+v", got.Source)
		}
	})
}
