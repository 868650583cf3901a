package datamover

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/echo-operator/echo-operator/internal/backupstore"
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
	return "", fmt.Errorf("%w: existing-data policy %q: want Fail or Replace", backupstore.ErrInvalidArgument, s)
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
	Store backupstore.Store
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
	// Verify reads every restored data file back from DataDir once the
	// data is in place and compares it with the manifest (size and
	// SHA-256): ErrChecksumMismatch when one differs or is missing. A
	// restore test asks for it, to prove what a served Echo would read.
	Verify bool
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
func Restore(ctx context.Context, o RestoreOptions) (*backupstore.Manifest, error) {
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
		return nil, fmt.Errorf("%w: no store", backupstore.ErrInvalidArgument)
	}
	if err := backupstore.CheckKey(o.Key); err != nil {
		return nil, err
	}
	policy, err := ParseExistingDataPolicy(string(o.ExistingData))
	if err != nil {
		return nil, err
	}
	o.ExistingData = policy
	if o.DataDir == "" {
		return nil, fmt.Errorf("%w: no data directory", backupstore.ErrInvalidArgument)
	}
	root, err := filepath.Abs(o.DataDir)
	if err != nil {
		return nil, fmt.Errorf("%w: data directory: %w", backupstore.ErrInvalidArgument, err)
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

func (r *restore) run(ctx context.Context) (m *backupstore.Manifest, err error) {
	start := time.Now()
	defer func() {
		if err != nil && r.created {
			_ = os.Remove(r.root) // only if still empty
		}
	}()
	if m, err = fetchManifest(ctx, r.Store, r.Key); err != nil {
		return nil, err
	}
	r.log.Info("manifest read", "location", r.Store.Location(backupstore.ManifestKey(r.Key)), "createdAt", m.CreatedAt,
		"archiveBytes", m.Archive.Size, "sha256", m.Archive.SHA256)
	if err := r.checkTarget(m); err != nil {
		return nil, err
	}
	if r.swapped {
		return r.reportEarlierSwap(m)
	}
	archiveKey := backupstore.ArchiveKey(r.Key, m.Compression)
	info, err := r.Store.Stat(ctx, archiveKey)
	if errors.Is(err, backupstore.ErrNotFound) {
		return nil, fmt.Errorf("the backup has a manifest but no archive: %w", err)
	}
	if err != nil {
		return nil, err
	}
	if info.Size != m.Archive.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes, the manifest says %d", backupstore.ErrChecksumMismatch, r.Store.Location(archiveKey), info.Size, m.Archive.Size)
	}
	r.log.Info("restore started", "location", r.Store.Location(archiveKey), "dataDir", r.root,
		"files", m.DataFiles(), "dataBytes", m.DataSize(), "existingData", string(r.ExistingData))

	staging, err := os.MkdirTemp(r.root, stagingPrefix)
	if err != nil {
		return nil, backupstore.ClassifyLocal(fmt.Errorf("create staging directory: %w", err))
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
	r.log.Info("archive verified: every file and the archive match the manifest's checksums", "archiveBytes", m.Archive.Size,
		"sha256", m.Archive.SHA256, "seconds", time.Since(start).Seconds())
	stagedData := filepath.Join(staging, strings.TrimSuffix(backupstore.DataPrefix, "/"))
	if err := r.stageRestoreMarker(stagedData, m); err != nil {
		return nil, err
	}
	aside, err := r.swap(stagedData)
	if err != nil {
		return nil, err
	}
	r.applyDirModes(m)
	if err := r.verify(m); err != nil {
		return nil, err
	}
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
func (r *restore) reportEarlierSwap(m *backupstore.Manifest) (*backupstore.Manifest, error) {
	r.applyDirModes(m)
	if err := r.verify(m); err != nil {
		return nil, err
	}
	r.log.Info("restore already completed by an earlier attempt", "dataDir", r.root, "restoreID", r.RestoreID,
		"files", m.DataFiles(), "dataBytes", m.DataSize(), "sha256", m.Archive.SHA256)
	return m, nil
}

// verify reads the restored data back when the options ask for it.
func (r *restore) verify(m *backupstore.Manifest) error {
	if !r.Verify {
		return nil
	}
	checked, err := verifyRestored(r.root, m)
	if err != nil {
		return err
	}
	r.log.Info("restored data read back and matches the manifest", "files", checked)
	return nil
}

// checkTarget creates the data directory when missing, removes staging
// directories left by a killed restore (after undoing its swap, if it was
// killed midway through one), and fails early on data in the way (policy
// Fail) or too little room. When the data in the way is this very
// restore's, swapped in by an earlier attempt, it sets r.swapped instead.
func (r *restore) checkTarget(m *backupstore.Manifest) error {
	if _, err := os.Lstat(r.root); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(r.root, dataDirPerm); err != nil {
			return backupstore.ClassifyLocal(fmt.Errorf("create data directory: %w", err))
		}
		r.created = true
	}
	entries, err := os.ReadDir(r.root)
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("read data directory: %w", err))
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
			backupstore.ErrTargetNotEmpty, r.root, describeEntries(existing))
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
		return backupstore.ClassifyLocal(fmt.Errorf("remove stale staging directory: %w", err))
	}
	return nil
}

// existingData lists the top-level entries of the data directory that are
// data, i.e. not the mover's own directories nor lost+found.
func (r *restore) existingData() ([]string, error) {
	entries, err := os.ReadDir(r.root)
	if err != nil {
		return nil, backupstore.ClassifyLocal(fmt.Errorf("read data directory: %w", err))
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
func checkSpace(dir string, m *backupstore.Manifest) error {
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
		return fmt.Errorf("%w: restoring needs about %d bytes in %s, %d are available", backupstore.ErrNoSpace, need, dir, avail)
	}
	return nil
}

// download streams the archive into staging and verifies it.
func (r *restore) download(ctx context.Context, m *backupstore.Manifest, archiveKey, staging string) (err error) {
	root, err := os.OpenRoot(staging)
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("open staging directory: %w", err))
	}
	defer backupstore.CloseInto(&err, root, "close staging directory")
	if err := root.Mkdir(strings.TrimSuffix(backupstore.DataPrefix, "/"), stagedPerm); err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("create staging directory: %w", err))
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
