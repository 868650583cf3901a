package datamover

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

func TestVerifyRestored(t *testing.T) {
	files := map[string]string{"journal/echo-0.jsonl": "{\"seq\":1}\n", "keep.txt": "kept"}
	manifest := func() *backupstore.Manifest {
		m := &backupstore.Manifest{Files: []backupstore.File{{Path: backupstore.ConfigName, Size: 2, SHA256: sha256Hex([]byte("{}"))}}}
		for _, name := range []string{"journal/echo-0.jsonl", "keep.txt"} {
			m.Files = append(m.Files, backupstore.File{Path: backupstore.DataPrefix + name, Size: int64(len(files[name])), SHA256: sha256Hex([]byte(files[name]))})
		}
		return m
	}
	cases := []struct {
		name    string
		tamper  func(t *testing.T, dir string)
		want    error
		checked int
	}{
		{name: "matches", checked: 2},
		{name: "extra files are not looked at", checked: 2, tamper: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"lost+found/": "", restoreMarkerName: "{}"})
		}},
		{name: "content differs", want: backupstore.ErrChecksumMismatch, tamper: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"keep.txt": "KEPT"})
		}},
		{name: "size differs", want: backupstore.ErrChecksumMismatch, tamper: func(t *testing.T, dir string) {
			writeTree(t, dir, map[string]string{"keep.txt": "kept, and more"})
		}},
		{name: "file missing", want: backupstore.ErrChecksumMismatch, tamper: func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, "keep.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "symlink in its place", want: backupstore.ErrChecksumMismatch, tamper: func(t *testing.T, dir string) {
			p := filepath.Join(dir, "keep.txt")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("journal/echo-0.jsonl", p); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTree(t, dir, files)
			if tc.tamper != nil {
				tc.tamper(t, dir)
			}
			checked, err := verifyRestored(dir, manifest())
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("verifyRestored: %v, want %v", err, tc.want)
			}
			if tc.want == nil && checked != tc.checked {
				t.Errorf("checked %d files, want %d", checked, tc.checked)
			}
		})
	}
}

func TestRestoreVerifyReadsBack(t *testing.T) {
	s := newFSStore(t)
	craftBackup(t, s, "ns/echo/b1", backupstore.CompressionGzip, []craftEntry{
		{Name: "data/journal/echo-0.jsonl", Data: "{\"seq\":1}\n"},
		{Name: "data/keep.txt", Data: "kept"},
	}, nil)
	dir := t.TempDir()
	m, err := Restore(context.Background(), RestoreOptions{DataDir: dir, Store: s, Key: "ns/echo/b1", RestoreID: "r1", Verify: true})
	if err != nil {
		t.Fatalf("Restore with Verify: %v", err)
	}
	if m.DataFiles() != 2 {
		t.Fatalf("restored %d data files, want 2", m.DataFiles())
	}

	// A retry finding its earlier swap reads the data back again, and
	// tells a change made since.
	writeTree(t, dir, map[string]string{"keep.txt": "changed"})
	_, err = Restore(context.Background(), RestoreOptions{DataDir: dir, Store: s, Key: "ns/echo/b1", RestoreID: "r1", Verify: true})
	if !errors.Is(err, backupstore.ErrChecksumMismatch) {
		t.Fatalf("retry over changed data: %v, want %v", err, backupstore.ErrChecksumMismatch)
	}
	if _, err := Restore(context.Background(), RestoreOptions{DataDir: dir, Store: s, Key: "ns/echo/b1", RestoreID: "r1"}); err != nil {
		t.Fatalf("retry without Verify: %v", err)
	}
}
