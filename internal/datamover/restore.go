package datamover

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// first, so two restores must not run against the same data directory at
// once, and nothing else (the Echo's pods) may write to it meanwhile.
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
		if rerr := os.RemoveAll(staging); rerr != nil {
			r.log.Warn("could not remove the staging directory", "path", staging, "error", rerr.Error())
		}
	}()
	if err := r.download(ctx, m, archiveKey, staging); err != nil {
		return nil, err
	}
	aside, err := r.swap(filepath.Join(staging, strings.TrimSuffix(DataPrefix, "/")))
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

// checkTarget creates the data directory when missing, removes staging
// directories left by a killed restore, and fails early on data in the way
// (policy Fail) or too little room.
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
			r.log.Warn("removing a staging directory left by an earlier restore", "path", filepath.Join(r.root, e.Name()))
			if err := os.RemoveAll(filepath.Join(r.root, e.Name())); err != nil {
				return classifyLocal(fmt.Errorf("remove stale staging directory: %w", err))
			}
		}
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

// swap moves existing data aside (policy Replace) and the staged entries of
// stagedData into the data directory. It returns the directory holding the
// previous data, if any. On failure it moves everything back.
func (r *restore) swap(stagedData string) (aside string, err error) {
	existing, err := r.existingData()
	if err != nil {
		return "", err
	}
	if len(existing) > 0 && r.ExistingData == ExistingDataFail {
		return "", fmt.Errorf("%w: %s appeared in %s during the restore", ErrTargetNotEmpty, describeEntries(existing), r.root)
	}
	staged, err := readDirNames(stagedData)
	if err != nil {
		return "", err
	}
	var undo []func() error
	defer func() {
		if err != nil {
			for _, u := range slices.Backward(undo) {
				if uerr := u(); uerr != nil {
					r.log.Error("could not undo a step of a failed restore", "error", uerr.Error())
				}
			}
		}
	}()
	if len(existing) > 0 {
		dir, err := r.makeAsideDir()
		if err != nil {
			return "", err
		}
		undo = append(undo, func() error { return os.Remove(dir) })
		for _, name := range existing {
			from, to := filepath.Join(r.root, name), filepath.Join(dir, name)
			if err := renameNoReplace(from, to); err != nil {
				return "", classifyLocal(fmt.Errorf("move existing %s aside: %w", name, err))
			}
			undo = append(undo, func() error { return renameNoReplace(to, from) })
		}
		if err := syncDir(dir); err != nil {
			return "", classifyLocal(err)
		}
		r.log.Info("moved existing data aside", "path", dir, "entries", len(existing))
		aside = dir
	}
	for _, name := range staged {
		from, to := filepath.Join(stagedData, name), filepath.Join(r.root, name)
		if err := renameNoReplace(from, to); err != nil {
			return "", classifyLocal(fmt.Errorf("move restored %s into place: %w", name, err))
		}
		undo = append(undo, func() error { return renameNoReplace(to, from) })
	}
	if err := syncDir(r.root); err != nil {
		return "", classifyLocal(err)
	}
	return aside, nil
}

// makeAsideDir creates .echo-pre-restore-<UTC timestamp>, with a numeric
// suffix if that name is taken.
func (r *restore) makeAsideDir() (string, error) {
	base := filepath.Join(r.root, preRestorePrefix+r.Now().UTC().Format("20060102T150405Z"))
	for i := 0; ; i++ {
		p := base
		if i > 0 {
			p = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(p, preRestorePerm)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrExist) || i >= 100 {
			return "", classifyLocal(fmt.Errorf("create pre-restore directory: %w", err))
		}
	}
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
