package datamover

// The read-back check of a restore: once the data is in place, every file
// the manifest lists is read again from the data directory and compared
// with the manifest, as a restore test asks (RestoreOptions.Verify).

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// verifyRestored reads back, from the data directory root, every data file
// of m and checks that it is a regular file of the manifest's size and
// SHA-256. It returns how many files it checked. Files the data directory
// holds besides them (the mover's marker, lost+found) are not looked at.
// Memory is bounded by one copy buffer.
func verifyRestored(root string, m *backupstore.Manifest) (checked int, err error) {
	dir, err := os.OpenRoot(root)
	if err != nil {
		return 0, backupstore.ClassifyLocal(fmt.Errorf("open data directory: %w", err))
	}
	defer func() { _ = dir.Close() }() // read-only
	buf := make([]byte, 1<<20)
	for _, f := range m.Files {
		name, ok := strings.CutPrefix(f.Path, backupstore.DataPrefix)
		if !ok {
			continue
		}
		if err := verifyFile(dir, name, f, buf); err != nil {
			return checked, err
		}
		checked++
	}
	return checked, nil
}

// verifyFile compares one restored file with its manifest entry.
func verifyFile(dir *os.Root, name string, want backupstore.File, buf []byte) (err error) {
	info, err := dir.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s is in the manifest but not in the restored data", backupstore.ErrChecksumMismatch, name)
	}
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("read back %s: %w", name, err))
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file in the restored data", backupstore.ErrChecksumMismatch, name)
	}
	f, err := dir.Open(name)
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("read back %s: %w", name, err))
	}
	defer func() { _ = f.Close() }() // read-only
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, buf)
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("read back %s: %w", name, err))
	}
	if got := hex.EncodeToString(h.Sum(nil)); n != want.Size || got != want.SHA256 {
		return fmt.Errorf("%w: restored %s has %d bytes with sha256 %s, the manifest says %d bytes with sha256 %s",
			backupstore.ErrChecksumMismatch, name, n, got, want.Size, want.SHA256)
	}
	return nil
}
