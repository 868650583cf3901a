package datamover

// The crash-safe swap of a restore: the staged data takes the place of the
// data directory's entries by renames recorded in a plan beforehand, so a
// mover killed midway is undone, from the plan, by the next run.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// swapPlanName is the file in the staging directory that records a swap
// under way. A swap renames entries one at a time, so a mover killed
// midway leaves the data directory holding part of the old data and part
// of the restored data; the plan is what lets the next run put it back
// (see undoSwap). It exists from before the first rename until the swap is
// complete or undone.
const swapPlanName = "swap-plan.json"

// swapPlan is what a swap moves: the entries of Existing into the
// pre-restore directory Aside (when there are any), then the entries of
// Staged from the staging directory into the data directory. Every name is
// a single path element.
type swapPlan struct {
	Aside    string   `json:"aside,omitempty"`
	Existing []string `json:"existing,omitempty"`
	Staged   []string `json:"staged"`
}

// swap moves existing data aside (policy Replace) and the staged entries of
// stagedData, this restore's marker among them, into the data directory,
// after removing the marker of another restore. It returns the directory
// holding the previous data, if any. On failure it moves everything back;
// should that fail too, it leaves the staging directory and its plan for
// the next run to finish the undo.
func (r *restore) swap(stagedData string) (aside string, err error) {
	staging := filepath.Dir(stagedData)
	p, err := r.planSwap(stagedData)
	if err != nil {
		return "", err
	}
	if err := r.removeOtherMarker(); err != nil {
		return "", err
	}
	if err := writeSwapPlan(staging, p); err != nil {
		return "", err
	}
	if err := r.moveEntries(stagedData, p); err != nil {
		if uerr := r.undoSwap(staging, p); uerr != nil {
			r.keepStaging = true
			r.log.Error("could not undo a failed swap; the next restore will finish undoing it", "staging", staging, "error", uerr.Error())
			return "", err
		}
		if rerr := removeSwapPlan(staging); rerr != nil {
			r.log.Warn("could not remove the plan of an undone swap", "path", staging, "error", rerr.Error())
		}
		return "", err
	}
	// Without its plan the swap is complete: from here on a killed mover
	// leaves the restored data in place.
	if err := removeSwapPlan(staging); err != nil {
		return "", err
	}
	if p.Aside == "" {
		return "", nil
	}
	aside = filepath.Join(r.root, p.Aside)
	r.log.Info("moved existing data aside", "path", aside, "entries", len(p.Existing))
	return aside, nil
}

// planSwap lists what a swap of stagedData moves, checking once more that
// the policy allows the existing data to be moved aside.
func (r *restore) planSwap(stagedData string) (swapPlan, error) {
	existing, err := r.existingData()
	if err != nil {
		return swapPlan{}, err
	}
	if len(existing) > 0 && r.ExistingData == ExistingDataFail {
		return swapPlan{}, fmt.Errorf("%w: %s appeared in %s during the restore", backupstore.ErrTargetNotEmpty, describeEntries(existing), r.root)
	}
	staged, err := readDirNames(stagedData)
	if err != nil {
		return swapPlan{}, err
	}
	p := swapPlan{Existing: existing, Staged: staged}
	if len(existing) > 0 {
		if p.Aside, err = r.asideName(); err != nil {
			return swapPlan{}, err
		}
	}
	return p, nil
}

// moveEntries performs the steps of the swap of p.
func (r *restore) moveEntries(stagedData string, p swapPlan) error {
	for _, step := range r.swapSteps(stagedData, p) {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// swapSteps lists what the swap of p does, in order: create the
// pre-restore directory, move every existing entry into it, move every
// staged entry into the data directory, and make the renames durable. A
// mover killed between any two steps leaves a state undoSwap reverts; it
// relies on that order.
func (r *restore) swapSteps(stagedData string, p swapPlan) []func() error {
	var steps []func() error
	aside := filepath.Join(r.root, p.Aside)
	if p.Aside != "" {
		steps = append(steps, func() error {
			if err := os.Mkdir(aside, preRestorePerm); err != nil {
				return backupstore.ClassifyLocal(fmt.Errorf("create pre-restore directory: %w", err))
			}
			return nil
		})
	}
	for _, name := range p.Existing {
		steps = append(steps, func() error {
			if err := renameNoReplace(filepath.Join(r.root, name), filepath.Join(aside, name)); err != nil {
				return backupstore.ClassifyLocal(fmt.Errorf("move existing %s aside: %w", name, err))
			}
			return nil
		})
	}
	for _, name := range p.Staged {
		steps = append(steps, func() error {
			if err := renameNoReplace(filepath.Join(stagedData, name), filepath.Join(r.root, name)); err != nil {
				return backupstore.ClassifyLocal(fmt.Errorf("move restored %s into place: %w", name, err))
			}
			return nil
		})
	}
	if p.Aside != "" {
		steps = append(steps, func() error { return backupstore.ClassifyLocal(syncDir(aside)) })
	}
	return append(steps, func() error { return backupstore.ClassifyLocal(syncDir(r.root)) })
}

// undoSwap puts back whatever a swap of p moved, whether it failed or its
// mover was killed at any point: restored entries found in the data
// directory return to staging, old entries found in the pre-restore
// directory return to the data directory, and the pre-restore directory,
// then empty, is removed. Each rename is atomic, so every entry is either
// where the swap found it or where it put it; and no staged entry moves
// before every existing one is aside, so a staged name missing from
// staging is in the data directory, not an old entry of the same name.
func (r *restore) undoSwap(staging string, p swapPlan) error {
	stagedData := filepath.Join(staging, strings.TrimSuffix(backupstore.DataPrefix, "/"))
	for _, name := range slices.Backward(p.Staged) {
		back := filepath.Join(stagedData, name)
		inStaging, err := exists(back)
		if err != nil {
			return backupstore.ClassifyLocal(fmt.Errorf("undo the restore of %s: %w", name, err))
		}
		if inStaging {
			continue // never moved
		}
		if err := renameNoReplace(filepath.Join(r.root, name), back); err != nil {
			return backupstore.ClassifyLocal(fmt.Errorf("undo the restore of %s: %w", name, err))
		}
	}
	if p.Aside != "" {
		dir := filepath.Join(r.root, p.Aside)
		for _, name := range slices.Backward(p.Existing) {
			aside := filepath.Join(dir, name)
			isAside, err := exists(aside)
			if err != nil {
				return backupstore.ClassifyLocal(fmt.Errorf("move existing %s back: %w", name, err))
			}
			if !isAside {
				continue // never moved
			}
			if err := renameNoReplace(aside, filepath.Join(r.root, name)); err != nil {
				return backupstore.ClassifyLocal(fmt.Errorf("move existing %s back: %w", name, err))
			}
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return backupstore.ClassifyLocal(fmt.Errorf("remove pre-restore directory: %w", err))
		}
	}
	return backupstore.ClassifyLocal(syncDir(r.root))
}

// writeSwapPlan stores p in staging, durably and whole (written under
// another name, then renamed), before the swap moves anything.
func writeSwapPlan(staging string, p swapPlan) error {
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode swap plan: %w", err)
	}
	tmp := filepath.Join(staging, swapPlanName+".tmp")
	err = createSynced(tmp, 0o600, b)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(staging, swapPlanName))
	}
	if err == nil {
		err = syncDir(staging)
	}
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("write swap plan: %w", err))
	}
	return nil
}

// createSynced creates the file name, which must not exist, with b as its
// content, and syncs it to disk before it returns.
func createSynced(name string, perm os.FileMode, b []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readSwapPlan returns the plan of a swap left unfinished in staging, or
// nil when there is none (the mover stopped before its swap or after it).
// A plan naming anything but plain entries of the data directory is
// refused: the data directory is the Echo's, and so is what it holds.
func readSwapPlan(staging string) (*swapPlan, error) {
	b, err := os.ReadFile(filepath.Join(staging, swapPlanName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, backupstore.ClassifyLocal(fmt.Errorf("read swap plan: %w", err))
	}
	var p swapPlan
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("read swap plan %s: %w", filepath.Join(staging, swapPlanName), err)
	}
	names := append(slices.Clone(p.Existing), p.Staged...)
	if p.Aside != "" {
		names = append(names, p.Aside)
	}
	for _, n := range names {
		if n == "" || n == "." || n == ".." || strings.ContainsRune(n, filepath.Separator) {
			return nil, fmt.Errorf("%w: swap plan %s names %q", backupstore.ErrUnsafePath, filepath.Join(staging, swapPlanName), n)
		}
	}
	if p.Aside != "" && !strings.HasPrefix(p.Aside, preRestorePrefix) {
		return nil, fmt.Errorf("%w: swap plan %s names %q as the pre-restore directory", backupstore.ErrUnsafePath, filepath.Join(staging, swapPlanName), p.Aside)
	}
	return &p, nil
}

// removeSwapPlan marks the swap in staging as finished, durably.
func removeSwapPlan(staging string) error {
	if err := os.Remove(filepath.Join(staging, swapPlanName)); err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("remove swap plan: %w", err))
	}
	return backupstore.ClassifyLocal(syncDir(staging))
}

// exists reports whether name exists, without following a final symlink.
func exists(name string) (bool, error) {
	_, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// asideName returns .echo-pre-restore-<UTC timestamp>, with a numeric
// suffix if that name is taken. Restores of one data directory do not run
// at once, so the name is still free when the swap creates it.
func (r *restore) asideName() (string, error) {
	base := preRestorePrefix + r.Now().UTC().Format("20060102T150405Z")
	for i := 0; i <= 100; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		taken, err := exists(filepath.Join(r.root, name))
		if err != nil {
			return "", backupstore.ClassifyLocal(fmt.Errorf("name the pre-restore directory: %w", err))
		}
		if !taken {
			return name, nil
		}
	}
	return "", fmt.Errorf("name the pre-restore directory: %s and 100 more are taken", base)
}

// applyDirModes gives restored directories their recorded modes, deepest
// first. It runs after the swap, because renaming a directory may need
// write permission on it; a failure is logged, the data is in place.
func (r *restore) applyDirModes(m *backupstore.Manifest) {
	for _, d := range slices.Backward(m.Directories) {
		p := filepath.Join(r.root, filepath.FromSlash(strings.TrimPrefix(d.Path, backupstore.DataPrefix)))
		if err := os.Chmod(p, d.Mode.Perm()); err != nil {
			r.log.Warn("could not set a restored directory's mode", "path", p, "error", err.Error())
		}
	}
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, backupstore.ClassifyLocal(fmt.Errorf("read %s: %w", dir, err))
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// renameNoReplace renames without ever replacing an existing destination.
func renameNoReplace(from, to string) error {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) {
		if err != nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
		}
		return nil
	}
	// The filesystem cannot refuse a replacement itself: check first.
	if _, err := os.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
