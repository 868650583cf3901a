package datamover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

// inspectConfig is the configuration the inspect tests back up, as the
// backup controller writes it: the Echo and its Helm release.
const inspectConfig = `{
  "echo": {"apiVersion": "echo.dev/v1alpha1", "kind": "Echo",
           "metadata": {"name": "journal", "namespace": "team-a", "annotations": {"note": "restored as it was"}},
           "spec": {"replicas": 2, "message": "hello", "persistence": {"enabled": true, "size": "1Gi"}}},
  "release": {"chart": "echo", "chartVersion": "0.1.0", "values": {"replicaCount": 2}}
}`

// inspectCreatedAt stamps the manifests of the inspect tests.
var inspectCreatedAt = time.Date(2026, 1, 2, 3, 4, 5, 678, time.UTC)

var inspectSource = backupstore.Source{Namespace: "team-a", Name: "journal", UID: "0b6f1a52-uid", Generation: 4}

// backupForInspect backs up dir with config into s under key.
func backupForInspect(t *testing.T, s backupstore.Store, dir, key, config string) *backupstore.Manifest {
	t.Helper()
	m, err := Backup(context.Background(), BackupOptions{DataDir: dir, Store: s, Key: key, Config: json.RawMessage(config),
		Source: inspectSource, Now: func() time.Time { return inspectCreatedAt }})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// editManifest replaces the first old in the stored manifest of key with
// new.
func editManifest(old, new string) func(t *testing.T, s backupstore.Store, key string) {
	return func(t *testing.T, s backupstore.Store, key string) {
		t.Helper()
		b := storetest.GetBytes(t, s, backupstore.ManifestKey(key))
		edited := bytes.Replace(b, []byte(old), []byte(new), 1)
		if bytes.Equal(edited, b) {
			t.Fatalf("manifest holds no %s", old)
		}
		storetest.PutBytes(t, s, backupstore.ManifestKey(key), edited)
	}
}

// unknownFormat gives the manifest of key a format version no mover reads.
var unknownFormat = editManifest(`"formatVersion": 1`, `"formatVersion": 99`)

// editArchive replaces the stored (gzip) archive of key with edit's result.
func editArchive(edit func([]byte) []byte) func(t *testing.T, s backupstore.Store, key string) {
	return func(t *testing.T, s backupstore.Store, key string) {
		t.Helper()
		archive := backupstore.ArchiveKey(key, backupstore.CompressionGzip)
		storetest.PutBytes(t, s, archive, edit(storetest.GetBytes(t, s, archive)))
	}
}

// truncateArchive cuts the stored archive of key in half.
var truncateArchive = editArchive(func(b []byte) []byte { return b[:len(b)/2] })

// deleteArchive deletes the stored archive of key, leaving its manifest.
func deleteArchive(t *testing.T, s backupstore.Store, key string) {
	t.Helper()
	if err := s.Delete(context.Background(), backupstore.ArchiveKey(key, backupstore.CompressionGzip)); err != nil {
		t.Fatal(err)
	}
}

// TestInspect: Inspect hands back the manifest Backup wrote, and reads
// nothing but the manifest.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	source, _ := sampleData(t)
	store := newFSStore(t)
	const key = "team-a/journal/b1"
	want := backupForInspect(t, store, source, key, inspectConfig)
	counting := &countingStore{Store: store}
	got, err := Inspect(ctx, InspectOptions{Store: counting, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, err := want.Encode()
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("Inspect returned\n%s\nBackup wrote\n%s", gotJSON, wantJSON)
	}
	var config bytes.Buffer
	if err := json.Compact(&config, []byte(inspectConfig)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Config, config.Bytes()) || got.Source != inspectSource || !got.CreatedAt.Equal(inspectCreatedAt) {
		t.Errorf("manifest config %s, source %+v, createdAt %v", got.Config, got.Source, got.CreatedAt)
	}
	if !slices.Equal(counting.gets, []string{backupstore.ManifestKey(key)}) {
		t.Errorf("Inspect read %v; want the manifest alone", counting.gets)
	}
}

// TestInspectRejects: a backup Inspect cannot vouch for fails with the
// class Restore would give it, before any data is read, and the store is
// left as it was.
func TestInspectRejects(t *testing.T) {
	source, _ := sampleData(t)
	cases := []struct {
		name   string
		backup bool // back up source under the key first
		tamper func(t *testing.T, s backupstore.Store, key string)
		key    string // default: the backup's key
		store  bool   // pass no store
		want   error
		reason moverprotocol.Reason
		// asRestore: Restore fails the same backup with the same class.
		asRestore bool
	}{
		{name: "missing backup", want: backupstore.ErrNotFound, reason: "NotFound", asRestore: true},
		{name: "unknown format version", backup: true, tamper: unknownFormat,
			want: backupstore.ErrUnknownFormat, reason: "UnknownFormat", asRestore: true},
		{name: "malformed manifest", backup: true, tamper: editManifest(`"compression": "gzip"`, `"compression": "zstd"`),
			want: backupstore.ErrCorruptArchive, reason: "CorruptArchive", asRestore: true},
		{name: "manifest cut short", backup: true, tamper: func(t *testing.T, s backupstore.Store, key string) {
			b := storetest.GetBytes(t, s, backupstore.ManifestKey(key))
			storetest.PutBytes(t, s, backupstore.ManifestKey(key), b[:len(b)-10])
		}, want: backupstore.ErrUnknownFormat, reason: "UnknownFormat", asRestore: true},
		{name: "archive missing", backup: true, tamper: deleteArchive, want: backupstore.ErrCorruptArchive, reason: "CorruptArchive"},
		{name: "archive truncated", backup: true, tamper: truncateArchive, want: backupstore.ErrChecksumMismatch, reason: "ChecksumMismatch", asRestore: true},
		{name: "archive grown", backup: true, tamper: editArchive(func(b []byte) []byte { return append(b, 0) }),
			want: backupstore.ErrChecksumMismatch, reason: "ChecksumMismatch", asRestore: true},
		{name: "bad key", key: "../b1", want: backupstore.ErrInvalidArgument, reason: "InvalidArgument", asRestore: true},
		{name: "no store", store: true, want: backupstore.ErrInvalidArgument, reason: "InvalidArgument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			store := newFSStore(t)
			key := "team-a/journal/b1"
			if c.backup {
				backupForInspect(t, store, source, key, inspectConfig)
			}
			if c.tamper != nil {
				c.tamper(t, store, key)
			}
			if c.key != "" {
				key = c.key
			}
			before := storedKeys(t, store, "")
			var s backupstore.Store = store
			if c.store {
				s = nil
			}
			_, err := Inspect(ctx, InspectOptions{Store: s, Key: key})
			if !errors.Is(err, c.want) || backupstore.Reason(err) != c.reason || backupstore.Retryable(err) {
				t.Fatalf("Inspect = %v (reason %s, retryable %v), want %v, reason %s, not retryable", err, backupstore.Reason(err), backupstore.Retryable(err), c.want, c.reason)
			}
			t.Logf("Inspect: %v", err)
			if after := storedKeys(t, store, ""); !slices.Equal(after, before) {
				t.Errorf("store holds %v after Inspect, held %v", after, before)
			}
			if c.asRestore {
				_, rerr := Restore(ctx, RestoreOptions{DataDir: filepath.Join(t.TempDir(), "data"), Store: s, Key: key})
				if backupstore.Reason(rerr) != backupstore.Reason(err) {
					t.Errorf("Restore fails with %v (reason %s), Inspect with reason %s", rerr, backupstore.Reason(rerr), backupstore.Reason(err))
				}
			}
		})
	}
}
