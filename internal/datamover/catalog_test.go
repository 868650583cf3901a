package datamover

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/internal/testutil/s3server"
)

// TestListBackups lists a store holding whole, damaged and foreign
// backups, in a filesystem and in a real S3 server: every backup with a
// manifest is listed, with what its manifest says, and the damaged ones
// with their problem; a second listing reads only new manifests.
func TestListBackups(t *testing.T) {
	source, _ := sampleData(t)
	inBothStores(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		for _, key := range []string{"team-a/web/b1", "team-a/web/b2", "team-a/web/no-archive", "team-a/web/resized", "team-a/web/future"} {
			backupForInspect(t, s, source, key, inspectConfig)
		}
		if err := s.Delete(ctx, ArchiveKey("team-a/web/no-archive", CompressionGzip)); err != nil {
			t.Fatal(err)
		}
		putBytes(t, s, ArchiveKey("team-a/web/resized", CompressionGzip), []byte("short"))
		unknownFormat(t, s, "team-a/web/future")
		// An upload that never finished: an archive without manifest.
		putBytes(t, s, ArchiveKey("team-a/web/partial", CompressionGzip), []byte("partial"))

		counting := &countingStore{Store: s}
		manifests := &ManifestCache{}
		got, err := ListBackups(ctx, counting, manifests)
		if err != nil {
			t.Fatal(err)
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
		b1 := got[slices.IndexFunc(got, func(b StoredBackup) bool { return b.Key == "team-a/web/b1" })]
		if b1.Source != inspectSource || !b1.CreatedAt.Equal(inspectCreatedAt) || b1.FormatVersion != FormatVersion || b1.Files == 0 || b1.ArchiveSize == 0 {
			t.Errorf("b1 = %+v", b1)
		}
		if len(counting.gets) != 5 {
			t.Errorf("the first listing read %v; want the five manifests", counting.gets)
		}

		backupForInspect(t, s, source, "team-a/web/b3", inspectConfig)
		counting.gets = nil
		again, err := ListBackups(ctx, counting, manifests)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != 6 || !slices.Equal(counting.gets, []string{ManifestKey("team-a/web/b3")}) {
			t.Errorf("the second listing found %d backups and read %v; want 6 and the new manifest alone", len(again), counting.gets)
		}
	})
}

// TestListBackupsStoreErrors: a store that cannot be listed or read is an
// error of the listing, not a problem of a backup.
func TestListBackupsStoreErrors(t *testing.T) {
	srv := s3server.Start(t, testBucket)
	s := newTestS3Store(t, srv, S3Config{Prefix: "echo-backups"})
	backupForInspect(t, s, t.TempDir(), "team-a/web/b1", inspectConfig)
	srv.Stop(t)
	if _, err := ListBackups(context.Background(), s, &ManifestCache{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("ListBackups of a stopped server: %v; want ErrUnavailable", err)
	}
}
