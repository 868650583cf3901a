package datamover

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// restoreMarkerName is the file a restore with an identity
// (RestoreOptions.RestoreID) leaves at the root of the data directory to
// say which restore put the data there. It is written into the staged data
// once the archive is verified and moved into place by the swap like any
// restored entry, so it is in the data directory with a completed swap
// only (while the swap's plan exists, undoSwap takes it back with the
// rest). A retry of the same restore that finds it knows its earlier
// attempt completed and reports that attempt's result instead of finding
// "existing data".
//
// Its name carries the pre-restore prefix, which every version of the
// mover treats as its own: backups leave it out, and restores neither
// count it as data nor delete it.
const restoreMarkerName = preRestorePrefix + "restored-by.json"

// maxRestoreMarkerSize bounds how much of a marker is read; a marker is a
// few hundred bytes.
const maxRestoreMarkerSize = 16 << 10

// restoreMarkerPerm is the mode of a marker.
const restoreMarkerPerm = 0o600

// restoreMarker is the content of the marker: the restore and the backup
// whose data the data directory holds.
type restoreMarker struct {
	// RestoreID is the restore's identity (the EchoRestore's UID).
	RestoreID string `json:"restoreID"`
	// Key is the backup's key in its store.
	Key string `json:"key"`
	// Archive is the restored archive as its manifest describes it.
	Archive backupstore.Archive `json:"archive"`
}

// newRestoreMarker is the marker of restoring the backup m under key as
// restore id.
func newRestoreMarker(id, key string, m *backupstore.Manifest) restoreMarker {
	return restoreMarker{RestoreID: id, Key: key, Archive: m.Archive}
}

// writeRestoreMarker creates mk in dir (the staged data), durably, before
// the swap's plan is written. It refuses to replace an entry of the same
// name, which only an archive the mover did not write can hold.
func writeRestoreMarker(dir string, mk restoreMarker) (err error) {
	b, err := json.Marshal(mk)
	if err != nil {
		return fmt.Errorf("encode restore marker: %w", err)
	}
	err = createSynced(filepath.Join(dir, restoreMarkerName), restoreMarkerPerm, b)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: the archive holds %s, a name the data mover keeps for itself", backupstore.ErrUnsafePath, backupstore.DataPrefix+restoreMarkerName)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("write restore marker: %w", err))
	}
	return nil
}

// readRestoreMarker returns the marker at the root of the data directory
// root, or nil when there is none. Anything but a regular file of that
// name, or one that does not decode, is an error.
func readRestoreMarker(root string) (*restoreMarker, error) {
	name := filepath.Join(root, restoreMarkerName)
	info, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read restore marker: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("read restore marker: %s is not a regular file", name)
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("read restore marker: %w", err)
	}
	defer func() { _ = f.Close() }() // read-only
	b, err := io.ReadAll(io.LimitReader(f, maxRestoreMarkerSize+1))
	if err != nil {
		return nil, fmt.Errorf("read restore marker: %w", err)
	}
	if len(b) > maxRestoreMarkerSize {
		return nil, fmt.Errorf("read restore marker: %s is larger than %d bytes", name, maxRestoreMarkerSize)
	}
	var mk restoreMarker
	if err := json.Unmarshal(b, &mk); err != nil {
		return nil, fmt.Errorf("read restore marker %s: %w", name, err)
	}
	return &mk, nil
}

// removeRestoreMarker removes the marker at the root of the data directory
// root, if there is one.
func removeRestoreMarker(root string) error {
	err := os.Remove(filepath.Join(root, restoreMarkerName))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return backupstore.ClassifyLocal(fmt.Errorf("remove the marker of an earlier restore: %w", err))
}

// swappedEarlier reports whether the data directory holds the data of this
// very restore (same RestoreID, same backup), swapped in by an earlier
// attempt that was stopped before it could report it. It is asked once any
// unfinished swap has been undone: the marker then stands for a completed
// one. A marker of another restore, or one that cannot be read, is not
// this restore's: the data directory is then judged as without it.
func (r *restore) swappedEarlier(m *backupstore.Manifest) bool {
	if r.RestoreID == "" {
		return false
	}
	mk, err := readRestoreMarker(r.root)
	if err != nil {
		r.log.Warn("ignoring a restore marker that cannot be read", "error", err.Error())
		return false
	}
	if mk == nil {
		return false
	}
	if *mk != newRestoreMarker(r.RestoreID, r.Key, m) {
		r.log.Info("the data directory holds the data of another restore", "restoreID", mk.RestoreID, "key", mk.Key)
		return false
	}
	return true
}

// stageRestoreMarker adds this restore's marker to the staged data, when
// the restore has an identity.
func (r *restore) stageRestoreMarker(stagedData string, m *backupstore.Manifest) error {
	if r.RestoreID == "" {
		return nil
	}
	return writeRestoreMarker(stagedData, newRestoreMarker(r.RestoreID, r.Key, m))
}

// removeOtherMarker removes, before the plan of a swap that moves this
// restore's marker in, the marker of another restore (or of this one, for
// another backup) from the data directory: it no longer describes the data
// once the swap is done. Should the swap be undone, the data it described
// comes back without it; only a retry of that other restore could have
// used it, and restores of one data directory do not overlap. Without an
// identity a restore leaves it alone, as it did before markers existed.
func (r *restore) removeOtherMarker() error {
	if r.RestoreID == "" {
		return nil
	}
	return removeRestoreMarker(r.root)
}
