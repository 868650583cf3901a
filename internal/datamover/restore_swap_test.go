package datamover

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// A swap plan left in a staging directory lies on the Echo's volume, which
// the Echo's pods write to: the next restore undoes a swap by it only when
// it names plain entries of the data directory, and otherwise fails before
// moving or removing anything.
func TestRestoreRefusesUnsafeSwapPlan(t *testing.T) {
	store := newFSStore(t)
	craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "new"}}, nil)
	for _, c := range []struct {
		name   string
		plan   string
		unsafe bool
	}{
		{"staged entry outside", `{"staged":["../../etc"]}`, true},
		{"nested existing entry", `{"aside":".echo-pre-restore-x","existing":["journal/old.jsonl"],"staged":[]}`, true},
		{"foreign pre-restore directory", `{"aside":"journal","existing":["keep.txt"],"staged":[]}`, true},
		{"not JSON", `{"staged":`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := t.TempDir()
			writeTree(t, target, existingData)
			writeTree(t, filepath.Join(target, stagingPrefix+"dead"), map[string]string{swapPlanName: c.plan, "data/f": "staged"})
			before := readTree(t, target)
			_, err := Restore(context.Background(), RestoreOptions{DataDir: target, Store: store, Key: "k", ExistingData: ExistingDataReplace})
			if err == nil || c.unsafe != errors.Is(err, backupstore.ErrUnsafePath) {
				t.Fatalf("Restore = %v, want a failure (ErrUnsafePath: %v)", err, c.unsafe)
			}
			assertUntouched(t, target, before)
		})
	}
}
