package datamover

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ExistingDataPolicy says what Restore does when the target already holds
// data.
type ExistingDataPolicy string

// Policies for data already in the target.
const (
	// ExistingDataFail refuses to restore (ErrTargetNotEmpty) before
	// anything is downloaded.
	ExistingDataFail ExistingDataPolicy = "Fail"
	// ExistingDataReplace moves the existing data into
	// <DataDir>/.echo-pre-restore-<timestamp>/, which the mover never
	// deletes, once the backup has been downloaded and verified.
	ExistingDataReplace ExistingDataPolicy = "Replace"
)

// ParseExistingDataPolicy accepts Fail, Replace and "" (Fail).
func ParseExistingDataPolicy(s string) (ExistingDataPolicy, error) {
	switch ExistingDataPolicy(s) {
	case "", ExistingDataFail:
		return ExistingDataFail, nil
	case ExistingDataReplace:
		return ExistingDataReplace, nil
	}
	return "", fmt.Errorf("%w: existing-data policy %q: want Fail or Replace", ErrInvalidArgument, s)
}

// Modes of what Restore creates itself.
const (
	dataDirPerm    = 0o750
	preRestorePerm = 0o750
	stagedPerm     = 0o700 // staged directories until their final mode is set
)

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// DataDir is the target; it is created when missing (and removed again
	// if the restore fails).
	DataDir string
	// Store holds the backup under Key.
	Store Store
	Key   string
	// ExistingData defaults to ExistingDataFail.
	ExistingData ExistingDataPolicy
	// RestoreID identifies this restore across retries (the EchoRestore's
	// UID). The swap leaves it in the data directory (restoreMarkerName),
	// so that a retry whose earlier attempt completed the swap, and was
	// stopped before it could say so, returns the manifest instead of
	// finding the restored data in its way. Empty: no marker is written or
	// read.
	RestoreID string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Now names the pre-restore directory; nil uses time.Now.
	Now func() time.Time
}

// Restore puts the backup under o.Key back into o.DataDir and returns its
// manifest.
//
// It reads the manifest first and rejects an unknown format version. It
// then checks the target: data already there fails the restore under
// ExistingDataFail before anything is downloaded, and so does a target
// without room for the files (ErrNoSpace). The archive is streamed into a
// staging directory inside DataDir (the same filesystem), verifying every
// entry as it arrives: its path (no absolute paths, no "..", only regular
// files and directories, else ErrUnsafePath), its presence in the manifest,
// its size and SHA-256; at the end the archive's own size and SHA-256 and
// that no listed entry is missing (else ErrChecksumMismatch). Only when all
// of that holds are the staged entries renamed into place, after moving
// existing data aside under ExistingDataReplace. On any failure the target
// is left as it was and the staging directory is removed.
//
// Memory is bounded: the gzip reader's read-ahead (gzipBlocks() × 512 KiB),
// a 1 MiB copy buffer and the manifest with its lookup tables.
//
// Restored files belong to the user running the mover and get the modes
// recorded in the manifest (permission bits only) and their modification
// times. Staging directories left by a mover that was killed are removed
// first, after undoing the swap of one killed midway through it (see
// swapPlanName), so two restores must not run against the same data
// directory at once, and nothing else (the Echo's pods) may write to it
// meanwhile.
//
// With o.RestoreID, the swap also moves in a marker naming the restore and
// the backup. A later run of the same restore that finds it, once any
// unfinished swap is undone, returns the manifest at once: its earlier
// attempt restored the data and was stopped before it could report it. It
// only gives the restored directories their modes again (the earlier
// attempt may have been stopped before it did) and downloads nothing.
func Restore(ctx context.Context, o RestoreOptions) (*Manifest, error) {
	r, err := newRestore(o)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

type restore struct {
	RestoreOptions
	root    string
	log     *slog.Logger
	created bool // root did not exist before this restore
	// swapped is set when an earlier attempt of this restore completed
	// its swap (see swappedEarlier): there is nothing left to restore.
	swapped bool
	// keepStaging is set when a failed swap could not be undone: the
	// staging directory keeps its plan for the next run.
	keepStaging bool
}

func newRestore(o RestoreOptions) (*restore, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("%w: no store", ErrInvalidArgument)
	}
	if err := CheckKey(o.Key); err != nil {
		return nil, err
	}
	policy, err := ParseExistingDataPolicy(string(o.ExistingData))
	if err != nil {
		return nil, err
	}
	o.ExistingData = policy
	if o.DataDir == "" {
		return nil, fmt.Errorf("%w: no data directory", ErrInvalidArgument)
	}
	root, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("%w: data directory: %w", ErrInvalidArgument, err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &restore{RestoreOptions: o, root: root, log: log}, nil
}

func (r *restore) run(ctx context.Context) (m *Manifest, err error) {
	start := time.Now()
	defer func() {
		if err != nil && r.created {
			_ = os.Remove(r.root) // only if still empty
		}
	}()
	if m, err = fetchManifest(ctx, r.Store, r.Key); err != nil {
		return nil, err
	}
	if err := r.checkTarget(m); err != nil {
		return nil, err
	}
	if r.swapped {
		return r.reportEarlierSwap(m), nil
	}
	archiveKey := ArchiveKey(r.Key, m.Compression)
	info, err := r.Store.Stat(ctx, archiveKey)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("the backup has a manifest but no archive: %w", err)
	}
	if err != nil {
		return nil, err
	}
	if info.Size != m.Archive.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes, the manifest says %d", ErrChecksumMismatch, r.Store.Location(archiveKey), info.Size, m.Archive.Size)
	}
	r.log.Info("restore started", "location", r.Store.Location(archiveKey), "dataDir", r.root,
		"files", m.DataFiles(), "dataBytes", m.DataSize(), "existingData", string(r.ExistingData))

	staging, err := os.MkdirTemp(r.root, stagingPrefix)
	if err != nil {
		return nil, classifyLocal(fmt.Errorf("create staging directory: %w", err))
	}
	defer func() {
		if r.keepStaging {
			return
		}
		if rerr := os.RemoveAll(staging); rerr != nil {
			r.log.Warn("could not remove the staging directory", "path", staging, "error", rerr.Error())
		}
	}()
	if err := r.download(ctx, m, archiveKey, staging); err != nil {
		return nil, err
	}
	stagedData := filepath.Join(staging, strings.TrimSuffix(DataPrefix, "/"))
	if err := r.stageRestoreMarker(stagedData, m); err != nil {
		return nil, err
	}
	aside, err := r.swap(stagedData)
	if err != nil {
		return nil, err
	}
	r.applyDirModes(m)
	elapsed := time.Since(start)
	attrs := []any{"dataDir", r.root, "files", m.DataFiles(), "dataBytes", m.DataSize(),
		"seconds", elapsed.Seconds(), "mbPerSecond", rate(m.DataSize(), elapsed)}
	if aside != "" {
		attrs = append(attrs, "previousData", aside)
	}
	r.log.Info("restore complete", attrs...)
	return m, nil
}

// reportEarlierSwap finishes a restore whose earlier attempt completed
// the swap: it gives the restored directories their modes, which that
// attempt may not have done, and returns m as that attempt would have.
func (r *restore) reportEarlierSwap(m *Manifest) *Manifest {
	r.applyDirModes(m)
	r.log.Info("restore already completed by an earlier attempt", "dataDir", r.root, "restoreID", r.RestoreID,
		"files", m.DataFiles(), "dataBytes", m.DataSize(), "sha256", m.Archive.SHA256)
	return m
}

// checkTarget creates the data directory when missing, removes staging
// directories left by a killed restore (after undoing its swap, if it was
// killed midway through one), and fails early on data in the way (policy
// Fail) or too little room. When the data in the way is this very
// restore's, swapped in by an earlier attempt, it sets r.swapped instead.
func (r *restore) checkTarget(m *Manifest) error {
	if _, err := os.Lstat(r.root); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(r.root, dataDirPerm); err != nil {
			return classifyLocal(fmt.Errorf("create data directory: %w", err))
		}
		r.created = true
	}
	entries, err := os.ReadDir(r.root)
	if err != nil {
		return classifyLocal(fmt.Errorf("read data directory: %w", err))
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagingPrefix) {
			if err := r.removeStaleStaging(filepath.Join(r.root, e.Name())); err != nil {
				return err
			}
		}
	}
	if r.swappedEarlier(m) {
		r.swapped = true
		return nil
	}
	existing, err := r.existingData()
	if err != nil {
		return err
	}
	if len(existing) > 0 && r.ExistingData == ExistingDataFail {
		return fmt.Errorf("%w: %s holds %s; restore with the Replace policy to keep it aside and restore anyway",
			ErrTargetNotEmpty, r.root, describeEntries(existing))
	}
	return checkSpace(r.root, m)
}

// removeStaleStaging removes a staging directory left by an earlier
// restore. When that restore was stopped in the middle of its swap, the
// data directory holds a mix of old and restored entries: the swap is
// undone first, so that this restore starts from the data as it was.
func (r *restore) removeStaleStaging(staging string) error {
	p, err := readSwapPlan(staging)
	if err != nil {
		return err
	}
	if p != nil {
		r.log.Warn("undoing the swap of an earlier restore that was stopped midway", "path", staging)
		if err := r.undoSwap(staging, *p); err != nil {
			return err
		}
	}
	r.log.Warn("removing a staging directory left by an earlier restore", "path", staging)
	if err := os.RemoveAll(staging); err != nil {
		return classifyLocal(fmt.Errorf("remove stale staging directory: %w", err))
	}
	return nil
}

// existingData lists the top-level entries of the data directory that are
// data, i.e. not the mover's own directories nor lost+found.
func (r *restore) existingData() ([]string, error) {
	entries, err := os.ReadDir(r.root)
	if err != nil {
		return nil, classifyLocal(fmt.Errorf("read data directory: %w", err))
	}
	var names []string
	for _, e := range entries {
		if !isMoverEntry(e.Name()) {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func describeEntries(names []string) string {
	const show = 3
	quoted := make([]string, 0, show)
	for _, n := range names[:min(len(names), show)] {
		quoted = append(quoted, fmt.Sprintf("%q", n))
	}
	s := strings.Join(quoted, ", ")
	if len(names) > show {
		s += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return s
}

// checkSpace fails with ErrNoSpace when the filesystem of dir clearly
// cannot hold the backup's files (each rounded up to whole blocks).
// Existing data stays where it is, so it does not free anything.
func checkSpace(dir string, m *Manifest) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Blocks == 0 || st.Bsize <= 0 {
		return nil // no figures to judge by; writing will tell
	}
	bsize := st.Bsize
	need := int64(len(m.Directories)+2) * bsize
	for _, f := range m.Files {
		need += (f.Size + bsize - 1) / bsize * bsize
	}
	avail := int64(st.Bavail) * bsize
	if need > avail {
		return fmt.Errorf("%w: restoring needs about %d bytes in %s, %d are available", ErrNoSpace, need, dir, avail)
	}
	return nil
}

// download streams the archive into staging and verifies it.
func (r *restore) download(ctx context.Context, m *Manifest, archiveKey, staging string) (err error) {
	root, err := os.OpenRoot(staging)
	if err != nil {
		return classifyLocal(fmt.Errorf("open staging directory: %w", err))
	}
	defer closeInto(&err, root, "close staging directory")
	if err := root.Mkdir(strings.TrimSuffix(DataPrefix, "/"), stagedPerm); err != nil {
		return classifyLocal(fmt.Errorf("create staging directory: %w", err))
	}
	body, err := r.Store.Get(ctx, archiveKey)
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }() // read-only
	x := newExtraction(m, root, r.Store.Location(archiveKey))
	if err := x.run(ctx, body); err != nil {
		return err
	}
	return x.syncDirs()
}

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
		return swapPlan{}, fmt.Errorf("%w: %s appeared in %s during the restore", ErrTargetNotEmpty, describeEntries(existing), r.root)
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
				return classifyLocal(fmt.Errorf("create pre-restore directory: %w", err))
			}
			return nil
		})
	}
	for _, name := range p.Existing {
		steps = append(steps, func() error {
			if err := renameNoReplace(filepath.Join(r.root, name), filepath.Join(aside, name)); err != nil {
				return classifyLocal(fmt.Errorf("move existing %s aside: %w", name, err))
			}
			return nil
		})
	}
	for _, name := range p.Staged {
		steps = append(steps, func() error {
			if err := renameNoReplace(filepath.Join(stagedData, name), filepath.Join(r.root, name)); err != nil {
				return classifyLocal(fmt.Errorf("move restored %s into place: %w", name, err))
			}
			return nil
		})
	}
	if p.Aside != "" {
		steps = append(steps, func() error { return classifyLocal(syncDir(aside)) })
	}
	return append(steps, func() error { return classifyLocal(syncDir(r.root)) })
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
	stagedData := filepath.Join(staging, strings.TrimSuffix(DataPrefix, "/"))
	for _, name := range slices.Backward(p.Staged) {
		back := filepath.Join(stagedData, name)
		inStaging, err := exists(back)
		if err != nil {
			return classifyLocal(fmt.Errorf("undo the restore of %s: %w", name, err))
		}
		if inStaging {
			continue // never moved
		}
		if err := renameNoReplace(filepath.Join(r.root, name), back); err != nil {
			return classifyLocal(fmt.Errorf("undo the restore of %s: %w", name, err))
		}
	}
	if p.Aside != "" {
		dir := filepath.Join(r.root, p.Aside)
		for _, name := range slices.Backward(p.Existing) {
			aside := filepath.Join(dir, name)
			isAside, err := exists(aside)
			if err != nil {
				return classifyLocal(fmt.Errorf("move existing %s back: %w", name, err))
			}
			if !isAside {
				continue // never moved
			}
			if err := renameNoReplace(aside, filepath.Join(r.root, name)); err != nil {
				return classifyLocal(fmt.Errorf("move existing %s back: %w", name, err))
			}
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return classifyLocal(fmt.Errorf("remove pre-restore directory: %w", err))
		}
	}
	return classifyLocal(syncDir(r.root))
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
		return classifyLocal(fmt.Errorf("write swap plan: %w", err))
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
		return nil, classifyLocal(fmt.Errorf("read swap plan: %w", err))
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
			return nil, fmt.Errorf("%w: swap plan %s names %q", ErrUnsafePath, filepath.Join(staging, swapPlanName), n)
		}
	}
	if p.Aside != "" && !strings.HasPrefix(p.Aside, preRestorePrefix) {
		return nil, fmt.Errorf("%w: swap plan %s names %q as the pre-restore directory", ErrUnsafePath, filepath.Join(staging, swapPlanName), p.Aside)
	}
	return &p, nil
}

// removeSwapPlan marks the swap in staging as finished, durably.
func removeSwapPlan(staging string) error {
	if err := os.Remove(filepath.Join(staging, swapPlanName)); err != nil {
		return classifyLocal(fmt.Errorf("remove swap plan: %w", err))
	}
	return classifyLocal(syncDir(staging))
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
			return "", classifyLocal(fmt.Errorf("name the pre-restore directory: %w", err))
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
func (r *restore) applyDirModes(m *Manifest) {
	for _, d := range slices.Backward(m.Directories) {
		p := filepath.Join(r.root, filepath.FromSlash(strings.TrimPrefix(d.Path, DataPrefix)))
		if err := os.Chmod(p, d.Mode.Perm()); err != nil {
			r.log.Warn("could not set a restored directory's mode", "path", p, "error", err.Error())
		}
	}
}

func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, classifyLocal(fmt.Errorf("read %s: %w", dir, err))
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

// extraction verifies and writes one archive into a staging root.
type extraction struct {
	m        *Manifest
	root     *os.Root
	location string
	files    map[string]File
	dirs     map[string]Directory
	seen     map[string]bool
	created  []string // staged directories, to fsync
	buf      []byte
}

func newExtraction(m *Manifest, root *os.Root, location string) *extraction {
	x := &extraction{
		m:        m,
		root:     root,
		location: location,
		files:    make(map[string]File, len(m.Files)),
		dirs:     make(map[string]Directory, len(m.Directories)),
		seen:     make(map[string]bool, len(m.Files)+len(m.Directories)),
		created:  []string{strings.TrimSuffix(DataPrefix, "/")},
		buf:      make([]byte, copyBufferSize),
	}
	for _, f := range m.Files {
		x.files[f.Path] = f
	}
	for _, d := range m.Directories {
		x.dirs[d.Path] = d
	}
	return x
}

// decodeError marks a failure to decode the archive (gzip or tar).
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// asDecodeError wraps a read error of the decompressed stream, unless it
// came from the store itself.
func asDecodeError(err error) error {
	var src *sourceError
	if errors.As(err, &src) {
		return src.err
	}
	return &decodeError{err: err}
}

func (x *extraction) run(ctx context.Context, body io.Reader) error {
	sum := newHashCounter()
	raw := io.TeeReader(sourceReader{ctxReader{ctx: ctx, r: body}}, sum)
	err := x.extract(raw)
	var derr *decodeError
	switch {
	case errors.As(err, &derr):
		return x.decodeFailure(raw, sum, derr.err)
	case errors.Is(err, ErrChecksumMismatch) || errors.Is(err, ErrUnsafePath):
		return x.entryFailure(raw, sum, err)
	case err != nil:
		return err
	}
	// Read whatever follows the compressed stream so that the archive's
	// checksum covers every stored byte.
	if err := drain(raw, x.buf); err != nil {
		return asSourceError(err)
	}
	if err := x.checkArchive(sum); err != nil {
		return err
	}
	for _, f := range x.m.Files {
		if !x.seen[f.Path] {
			return fmt.Errorf("%w: %s is listed in the manifest but missing from the archive", ErrChecksumMismatch, f.Path)
		}
	}
	for _, d := range x.m.Directories {
		if !x.seen[d.Path] {
			return fmt.Errorf("%w: directory %s is listed in the manifest but missing from the archive", ErrChecksumMismatch, d.Path)
		}
	}
	return x.checkConfig()
}

// extract decompresses and unpacks raw. Decoding failures come back as
// *decodeError.
func (x *extraction) extract(raw io.Reader) (err error) {
	dec, err := newDecompressor(raw, x.m.Compression)
	if err != nil {
		return asDecodeError(err)
	}
	// Closing stops the gzip read-ahead before raw is read again.
	defer func() {
		if cerr := dec.Close(); cerr != nil && err == nil {
			err = asDecodeError(cerr)
		}
	}()
	tr := tar.NewReader(dec)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, tar.ErrInsecurePath) && hdr != nil {
			err = nil // with GODEBUG=tarinsecurepath=0; entry rejects the name
		}
		if err != nil {
			return asDecodeError(err)
		}
		if err := x.entry(hdr, tr); err != nil {
			return err
		}
	}
	// The rest of the stream (tar padding, the gzip trailer with its CRC)
	// must decode too.
	if err := drain(dec, x.buf); err != nil {
		return asDecodeError(err)
	}
	return nil
}

// decodeFailure explains an archive that could not be decoded: when the
// stored bytes differ from what the backup wrote, that is the cause.
func (x *extraction) decodeFailure(raw io.Reader, sum *hashCounter, cause error) error {
	if err := drain(raw, x.buf); err != nil {
		return asSourceError(err)
	}
	if err := x.checkArchive(sum); err != nil {
		return fmt.Errorf("%w (decoding stopped at: %w)", err, cause)
	}
	return fmt.Errorf("%w: %s matches its manifest but cannot be decoded: %w", ErrCorruptArchive, x.location, cause)
}

// drain reads r to its end with buf. It calls Read only: pgzip's WriteTo
// mishandles a partly consumed block.
func drain(r io.Reader, buf []byte) error {
	for {
		_, err := r.Read(buf)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// entryFailure explains an entry that failed verification: when the stored
// bytes differ from what the backup wrote, that is the cause, and the entry
// is a symptom.
func (x *extraction) entryFailure(raw io.Reader, sum *hashCounter, cause error) error {
	if err := drain(raw, x.buf); err != nil {
		return asSourceError(err)
	}
	if err := x.checkArchive(sum); err != nil {
		return fmt.Errorf("%w (first bad entry: %s)", err, cause.Error())
	}
	return cause
}

func asSourceError(err error) error {
	var src *sourceError
	if errors.As(err, &src) {
		return src.err
	}
	return err
}

func (x *extraction) checkArchive(sum *hashCounter) error {
	a := x.m.Archive
	if got := sum.sum(); sum.n != a.Size || got != a.SHA256 {
		return fmt.Errorf("%w: %s has %d bytes with sha256 %s, the manifest says %d bytes with sha256 %s",
			ErrChecksumMismatch, x.location, sum.n, got, a.Size, a.SHA256)
	}
	return nil
}

// checkConfig compares the archive's config.json with the manifest's
// config.
func (x *extraction) checkConfig() error {
	b, err := x.root.ReadFile(ConfigName)
	if err != nil {
		return classifyLocal(fmt.Errorf("read staged %s: %w", ConfigName, err))
	}
	inArchive, err1 := compactConfig(b)
	inManifest, err2 := compactConfig(x.m.Config)
	if err1 != nil || err2 != nil || !bytes.Equal(inArchive, inManifest) {
		return fmt.Errorf("%w: the archive's %s differs from the manifest's config", ErrChecksumMismatch, ConfigName)
	}
	return nil
}

// entry checks one archive entry and stages it.
func (x *extraction) entry(hdr *tar.Header, body io.Reader) error {
	name, err := checkArchivePath(hdr.Name)
	if err != nil {
		return err
	}
	isDir := hdr.Typeflag == tar.TypeDir
	if !inArchiveLayout(name, isDir) {
		return fmt.Errorf("%w: %q is neither %s nor under %s", ErrUnsafePath, hdr.Name, ConfigName, DataPrefix)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(name)
	case tar.TypeReg: // the reader turns legacy TypeRegA into TypeReg
		return x.file(name, hdr, body)
	}
	return fmt.Errorf("%w: %q is a %s; only regular files and directories are restored", ErrUnsafePath, hdr.Name, typeName(hdr.Typeflag))
}

func typeName(flag byte) string {
	switch flag {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("entry of type %q", flag)
}

func (x *extraction) claim(name string) error {
	if x.seen[name] {
		return fmt.Errorf("%w: %s appears twice in the archive", ErrChecksumMismatch, name)
	}
	x.seen[name] = true
	return nil
}

func (x *extraction) dir(name string) error {
	if _, ok := x.dirs[name]; !ok {
		return fmt.Errorf("%w: directory %s is in the archive but not in the manifest", ErrChecksumMismatch, name)
	}
	if err := x.claim(name); err != nil {
		return err
	}
	return x.mkdirAll(name)
}

// mkdirAll creates a staged directory and its parents, remembering them
// for syncDirs.
func (x *extraction) mkdirAll(name string) error {
	var missing []string
	for p := name; p != "." && p != ""; p = path.Dir(p) {
		if _, err := x.root.Lstat(p); err == nil {
			break
		}
		missing = append(missing, p)
	}
	for _, p := range slices.Backward(missing) {
		if err := x.root.Mkdir(p, stagedPerm); err != nil {
			return classifyLocal(fmt.Errorf("stage %s: %w", p, err))
		}
		x.created = append(x.created, p)
	}
	return nil
}

func (x *extraction) file(name string, hdr *tar.Header, body io.Reader) (err error) {
	want, ok := x.files[name]
	if !ok {
		return fmt.Errorf("%w: %s is in the archive but not in the manifest", ErrChecksumMismatch, name)
	}
	if err := x.claim(name); err != nil {
		return err
	}
	if hdr.Size != want.Size {
		return fmt.Errorf("%w: %s is %d bytes in the archive, the manifest says %d", ErrChecksumMismatch, name, hdr.Size, want.Size)
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return classifyLocal(fmt.Errorf("stage %s: %w", name, err))
	}
	defer func() {
		if f != nil {
			_ = f.Close() // only on failure; staging is removed
		}
	}()
	h := sha256.New()
	for done := int64(0); done < hdr.Size; {
		n, rerr := body.Read(x.buf[:min(int64(len(x.buf)), hdr.Size-done)])
		if n > 0 {
			h.Write(x.buf[:n])
			if _, err := f.Write(x.buf[:n]); err != nil {
				return classifyLocal(fmt.Errorf("stage %s: %w", name, err))
			}
			done += int64(n)
		}
		if rerr != nil && (done < hdr.Size || !errors.Is(rerr, io.EOF)) {
			if errors.Is(rerr, io.EOF) {
				rerr = io.ErrUnexpectedEOF
			}
			return asDecodeError(rerr)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want.SHA256 {
		return fmt.Errorf("%w: %s has sha256 %s, the manifest says %s", ErrChecksumMismatch, name, got, want.SHA256)
	}
	if err := f.Chmod(want.Mode.Perm()); err != nil {
		return fmt.Errorf("stage %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return classifyLocal(fmt.Errorf("stage %s: %w", name, err))
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return classifyLocal(fmt.Errorf("stage %s: %w", name, cerr))
	}
	if !hdr.ModTime.IsZero() {
		if err := x.root.Chtimes(name, hdr.ModTime, hdr.ModTime); err != nil {
			return fmt.Errorf("stage %s: %w", name, err)
		}
	}
	return nil
}

// syncDirs makes the staged directory entries durable before the swap.
func (x *extraction) syncDirs() error {
	for _, p := range slices.Backward(x.created) {
		if err := syncRootDir(x.root, p); err != nil {
			return classifyLocal(fmt.Errorf("sync staged %s: %w", p, err))
		}
	}
	return syncRootDir(x.root, "")
}
