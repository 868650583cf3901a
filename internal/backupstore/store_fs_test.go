package backupstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

func TestFSStore(t *testing.T) {
	ctx := context.Background()
	s := newFSStore(t)
	storetest.PutBytes(t, s, "b/one/manifest.json", []byte("1"))
	storetest.PutBytes(t, s, "b/one/data.tar.gz", []byte("archive"))
	storetest.PutBytes(t, s, "b/two/manifest.json", []byte("22"))
	storetest.PutBytes(t, s, "c", []byte("333"))
	storetest.PutBytes(t, s, "c", []byte("3333")) // replaces

	if got := string(storetest.GetBytes(t, s, "b/one/data.tar.gz")); got != "archive" {
		t.Errorf("Get = %q", got)
	}
	info, err := s.Stat(ctx, "c")
	if err != nil || info.Size != 4 || info.Key != "c" {
		t.Errorf("Stat = %+v, %v", info, err)
	}
	list, err := s.List(ctx, "b/")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list {
		keys = append(keys, o.Key)
	}
	if got := strings.Join(keys, ","); got != "b/one/data.tar.gz,b/one/manifest.json,b/two/manifest.json" {
		t.Errorf("List(b/) = %s", got)
	}
	if all, err := s.List(ctx, ""); err != nil || len(all) != 4 {
		t.Errorf("List(\"\") = %v, %v", all, err)
	}
	if none, err := s.List(ctx, "nothing/here/"); err != nil || len(none) != 0 {
		t.Errorf("List(missing) = %v, %v", none, err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Errorf("deleting a missing object: %v", err)
	}
	for name, err := range map[string]error{
		"get":  func() error { _, err := s.Get(ctx, "c"); return err }(),
		"stat": func() error { _, err := s.Stat(ctx, "c"); return err }(),
		"dir":  func() error { _, err := s.Stat(ctx, "b/one"); return err }(),
		"open": func() error { _, err := s.Get(ctx, "b/one"); return err }(),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of a missing object: %v, want ErrNotFound", name, err)
		}
	}
	if s.Location("b/one") != filepath.Join(s.dir, "b", "one") {
		t.Errorf("Location = %s", s.Location("b/one"))
	}
}

func TestFSStoreRejectsEscapingKeys(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	root := filepath.Join(parent, "store")
	if err := os.Mkdir(root, 0o750); err != nil {
		t.Fatal(err)
	}
	s, err := NewFSStore(root)
	if err != nil {
		t.Fatal(err)
	}
	// A symlink inside the store pointing out of it must not be followed.
	if err := os.Symlink(parent, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"../escape", "/abs", "a/../../escape"} {
		if err := s.Put(ctx, key, strings.NewReader("x")); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Put(%q) = %v, want ErrInvalidArgument", key, err)
		}
	}
	if err := s.Put(ctx, "out/escape", strings.NewReader("x")); err == nil {
		t.Error("Put through a symlink leaving the root succeeded")
	}
	if _, err := os.Stat(filepath.Join(parent, "escape")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("something was written outside the store: %v", err)
	}
}

func TestFSStoreFailedPutLeavesNothing(t *testing.T) {
	ctx := context.Background()
	s := newFSStore(t)
	storetest.PutBytes(t, s, "k/data.tar.gz", []byte("old"))
	boom := errors.New("producer failed")
	r := io.MultiReader(strings.NewReader("partial"), iotest.ErrReader(boom))
	if err := s.Put(ctx, "k/data.tar.gz", r); !errors.Is(err, boom) {
		t.Fatalf("Put = %v, want the reader's error unchanged", err)
	}
	if got := string(storetest.GetBytes(t, s, "k/data.tar.gz")); got != "old" {
		t.Errorf("object = %q after a failed Put, want the old one", got)
	}
	entries, err := os.ReadDir(filepath.Join(s.dir, "k"))
	if err != nil || len(entries) != 1 {
		t.Errorf("store holds %v (%v); want only the object, no temporary file", entries, err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Put(cancelled, "k/other", strings.NewReader("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context = %v", err)
	}
}

// TestFSStoreAbortIncompleteUpload: the temporary files a Put killed
// mid-way left behind go, those of other objects and the objects stay.
func TestFSStoreAbortIncompleteUpload(t *testing.T) {
	ctx := context.Background()
	s := newFSStore(t)
	storetest.PutBytes(t, s, "k/data.tar.gz", []byte("kept"))
	dir := filepath.Join(s.dir, "k")
	for _, name := range []string{".data.tar.gz" + tmpMarker + "1a2b", ".data.tar.gz" + tmpMarker + "3c4d", ".manifest.json" + tmpMarker + "5e6f"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AbortIncompleteUpload(ctx, "k/data.tar.gz"); err != nil {
		t.Fatal(err)
	}
	var left []string
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		left = append(left, e.Name())
	}
	if want := []string{".manifest.json" + tmpMarker + "5e6f", "data.tar.gz"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if err := s.AbortIncompleteUpload(ctx, "absent/data.tar.gz"); err != nil {
		t.Errorf("nothing to abort under a missing directory: %v", err)
	}
}

func TestFSStoreNoSpace(t *testing.T) {
	dir := storetest.MountTmpfs(t, "size=256k")
	s, err := NewFSStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Put(context.Background(), "k/data.tar", bytes.NewReader(make([]byte, 1<<20)))
	if !errors.Is(err, ErrNoSpace) || Retryable(err) {
		t.Fatalf("Put on a full disk = %v, want ErrNoSpace, not retryable", err)
	}
	if objs, err := s.List(context.Background(), ""); err != nil || len(objs) != 0 {
		t.Errorf("store holds %v after a failed Put (%v)", objs, err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "k"))
	if len(entries) != 0 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestNewFSStore(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewFSStore(file); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NewFSStore(file) = %v", err)
	}
	if _, err := NewFSStore(filepath.Join(file, "missing")); err == nil {
		t.Error("NewFSStore(missing) succeeded")
	}
	if _, err := NewFSStore(""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NewFSStore(\"\") = %v", err)
	}
}
