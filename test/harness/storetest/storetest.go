package storetest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"golang.org/x/sys/unix"
)

// Store is what PutBytes and GetBytes need of a backup store.
type Store interface {
	Put(ctx context.Context, key string, r io.Reader) error
	Get(ctx context.Context, key string) (io.ReadCloser, error)
}

// PutBytes writes b under key, failing the test on an error.
func PutBytes(t testing.TB, s Store, key string, b []byte) {
	t.Helper()
	if err := s.Put(context.Background(), key, bytes.NewReader(b)); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// GetBytes reads key whole, failing the test on an error.
func GetBytes(t testing.TB, s Store, key string) []byte {
	t.Helper()
	r, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer func() { _ = r.Close() }()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return b
}

// MountTmpfs mounts a tmpfs with the given options on a new directory and
// unmounts it when the test ends. It skips the test where mounting is not
// permitted.
func MountTmpfs(t *testing.T, options string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, options); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			t.Skipf("mounting a tmpfs (%s) is not permitted here (needs root or CAP_SYS_ADMIN): %v", options, err)
		}
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}
