package datamover

// The extraction of a restore: the archive is verified against its
// manifest and written into a staging root as it streams.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// extraction verifies and writes one archive into a staging root.
type extraction struct {
	m        *backupstore.Manifest
	root     *os.Root
	location string
	files    map[string]backupstore.File
	dirs     map[string]backupstore.Directory
	seen     map[string]bool
	created  []string // staged directories, to fsync
	buf      []byte
}

func newExtraction(m *backupstore.Manifest, root *os.Root, location string) *extraction {
	x := &extraction{
		m:        m,
		root:     root,
		location: location,
		files:    make(map[string]backupstore.File, len(m.Files)),
		dirs:     make(map[string]backupstore.Directory, len(m.Directories)),
		seen:     make(map[string]bool, len(m.Files)+len(m.Directories)),
		created:  []string{strings.TrimSuffix(backupstore.DataPrefix, "/")},
		buf:      make([]byte, backupstore.CopyBufferSize),
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
	case errors.Is(err, backupstore.ErrChecksumMismatch) || errors.Is(err, backupstore.ErrUnsafePath):
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
			return fmt.Errorf("%w: %s is listed in the manifest but missing from the archive", backupstore.ErrChecksumMismatch, f.Path)
		}
	}
	for _, d := range x.m.Directories {
		if !x.seen[d.Path] {
			return fmt.Errorf("%w: directory %s is listed in the manifest but missing from the archive", backupstore.ErrChecksumMismatch, d.Path)
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
	return fmt.Errorf("%w: %s matches its manifest but cannot be decoded: %w", backupstore.ErrCorruptArchive, x.location, cause)
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
			backupstore.ErrChecksumMismatch, x.location, sum.n, got, a.Size, a.SHA256)
	}
	return nil
}

// checkConfig compares the archive's config.json with the manifest's
// config.
func (x *extraction) checkConfig() error {
	b, err := x.root.ReadFile(backupstore.ConfigName)
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("read staged %s: %w", backupstore.ConfigName, err))
	}
	inArchive, err1 := compactConfig(b)
	inManifest, err2 := compactConfig(x.m.Config)
	if err1 != nil || err2 != nil || !bytes.Equal(inArchive, inManifest) {
		return fmt.Errorf("%w: the archive's %s differs from the manifest's config", backupstore.ErrChecksumMismatch, backupstore.ConfigName)
	}
	return nil
}

// entry checks one archive entry and stages it.
func (x *extraction) entry(hdr *tar.Header, body io.Reader) error {
	name, err := backupstore.CheckArchivePath(hdr.Name)
	if err != nil {
		return err
	}
	isDir := hdr.Typeflag == tar.TypeDir
	if !backupstore.InArchiveLayout(name, isDir) {
		return fmt.Errorf("%w: %q is neither %s nor under %s", backupstore.ErrUnsafePath, hdr.Name, backupstore.ConfigName, backupstore.DataPrefix)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return x.dir(name)
	case tar.TypeReg: // the reader turns legacy TypeRegA into TypeReg
		return x.file(name, hdr, body)
	}
	return fmt.Errorf("%w: %q is a %s; only regular files and directories are restored", backupstore.ErrUnsafePath, hdr.Name, typeName(hdr.Typeflag))
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
		return fmt.Errorf("%w: %s appears twice in the archive", backupstore.ErrChecksumMismatch, name)
	}
	x.seen[name] = true
	return nil
}

func (x *extraction) dir(name string) error {
	if _, ok := x.dirs[name]; !ok {
		return fmt.Errorf("%w: directory %s is in the archive but not in the manifest", backupstore.ErrChecksumMismatch, name)
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
			return backupstore.ClassifyLocal(fmt.Errorf("stage %s: %w", p, err))
		}
		x.created = append(x.created, p)
	}
	return nil
}

func (x *extraction) file(name string, hdr *tar.Header, body io.Reader) (err error) {
	want, ok := x.files[name]
	if !ok {
		return fmt.Errorf("%w: %s is in the archive but not in the manifest", backupstore.ErrChecksumMismatch, name)
	}
	if err := x.claim(name); err != nil {
		return err
	}
	if hdr.Size != want.Size {
		return fmt.Errorf("%w: %s is %d bytes in the archive, the manifest says %d", backupstore.ErrChecksumMismatch, name, hdr.Size, want.Size)
	}
	if err := x.mkdirAll(path.Dir(name)); err != nil {
		return err
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("stage %s: %w", name, err))
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
				return backupstore.ClassifyLocal(fmt.Errorf("stage %s: %w", name, err))
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
		return fmt.Errorf("%w: %s has sha256 %s, the manifest says %s", backupstore.ErrChecksumMismatch, name, got, want.SHA256)
	}
	if err := f.Chmod(want.Mode.Perm()); err != nil {
		return fmt.Errorf("stage %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("stage %s: %w", name, err))
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("stage %s: %w", name, cerr))
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
		if err := backupstore.SyncRootDir(x.root, p); err != nil {
			return backupstore.ClassifyLocal(fmt.Errorf("sync staged %s: %w", p, err))
		}
	}
	return backupstore.SyncRootDir(x.root, "")
}

// sourceError marks an error that came from reading the store, so that
// extraction can tell a broken download from a broken archive.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// sourceReader tags every read error except io.EOF as a sourceError.
type sourceReader struct{ r io.Reader }

func (s sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = &sourceError{err: err}
	}
	return n, err
}

// ctxReader stops a copy loop once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
