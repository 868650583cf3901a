package datamover

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"runtime"
	"time"

	"github.com/klauspost/pgzip"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// Parallel gzip settings. The writer keeps at most gzipBlocks() blocks in
// flight, each needing an input and an output buffer of about gzipBlockSize
// plus a compressor's state; the reader reads ahead as many blocks. Each
// block is compressed with the previous block's tail as its dictionary, so
// smaller blocks cost next to nothing in ratio.
const (
	gzipBlockSize = 512 << 10
	// gzipLevel trades a little ratio for speed (docs/benchmarks.md
	// compares it with gzip -6).
	gzipLevel = 3
	// maxGzipBlocks caps the blocks in flight, and so memory, on machines
	// with many cores.
	maxGzipBlocks = 8
)

func gzipBlocks() int {
	return min(max(2*runtime.GOMAXPROCS(0), 2), maxGzipBlocks)
}

// journalExt marks files written as append-only JSON lines; a backup
// captures them up to their last complete line.
const journalExt = ".jsonl"

// newCompressor wraps w according to c. Closing it flushes but does not
// close w.
func newCompressor(w io.Writer, c backupstore.Compression) (io.WriteCloser, error) {
	if c == backupstore.CompressionNone {
		return nopWriteCloser{w}, nil
	}
	zw, err := pgzip.NewWriterLevel(w, gzipLevel)
	if err != nil {
		return nil, fmt.Errorf("gzip writer: %w", err)
	}
	if err := zw.SetConcurrency(gzipBlockSize, gzipBlocks()); err != nil {
		return nil, fmt.Errorf("gzip writer: %w", err)
	}
	return zw, nil
}

// newDecompressor wraps r according to c. The gzip reader checks the
// stream's CRC and length when it reaches its end.
func newDecompressor(r io.Reader, c backupstore.Compression) (io.ReadCloser, error) {
	if c == backupstore.CompressionNone {
		return io.NopCloser(r), nil
	}
	zr, err := pgzip.NewReaderN(r, gzipBlockSize, gzipBlocks())
	if err != nil {
		return nil, fmt.Errorf("gzip header: %w", err)
	}
	return zr, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// hashCounter hashes and counts what is written through it.
type hashCounter struct {
	h hash.Hash
	n int64
}

func newHashCounter() *hashCounter { return &hashCounter{h: sha256.New()} }

func (c *hashCounter) Write(p []byte) (int, error) {
	c.h.Write(p)
	c.n += int64(len(p))
	return len(p), nil
}

func (c *hashCounter) sum() string { return hex.EncodeToString(c.h.Sum(nil)) }

// archiveWriter writes tar entries and records them for the manifest.
type archiveWriter struct {
	tw    *tar.Writer
	buf   []byte
	files []backupstore.File
	dirs  []backupstore.Directory
}

func newArchiveWriter(w io.Writer) *archiveWriter {
	return &archiveWriter{tw: tar.NewWriter(w), buf: make([]byte, backupstore.CopyBufferSize)}
}

func (a *archiveWriter) addDir(name string, perm fs.FileMode, mtime time.Time) error {
	hdr := &tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: int64(perm), ModTime: mtime}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	a.dirs = append(a.dirs, backupstore.Directory{Path: name, Mode: backupstore.Mode(perm)})
	return nil
}

// addFile writes exactly size bytes of r as a regular file. A source that
// ends early has changed since its size was taken: ErrSourceChanged.
func (a *archiveWriter) addFile(name string, r io.Reader, size int64, perm fs.FileMode, mtime time.Time) error {
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: int64(perm), ModTime: mtime}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive %s: %w", name, err)
	}
	h := sha256.New()
	var done int64
	for done < size {
		n, err := r.Read(a.buf[:min(int64(len(a.buf)), size-done)])
		if n > 0 {
			h.Write(a.buf[:n])
			if _, werr := a.tw.Write(a.buf[:n]); werr != nil {
				return fmt.Errorf("archive %s: %w", name, werr)
			}
			done += int64(n)
		}
		if errors.Is(err, io.EOF) && done < size {
			return fmt.Errorf("%w: %s shrank from %d to %d bytes while being read", backupstore.ErrSourceChanged, name, size, done)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return backupstore.ClassifyLocal(fmt.Errorf("read %s: %w", name, err))
		}
	}
	a.files = append(a.files, backupstore.File{Path: name, Size: size, Mode: backupstore.Mode(perm), SHA256: hex.EncodeToString(h.Sum(nil))})
	return nil
}

func (a *archiveWriter) close() error {
	if err := a.tw.Close(); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// completeLength returns the length of the longest prefix of r[0:size)
// that ends with a newline: the complete lines of a journal. A line being
// appended at the time has no newline yet and is left out.
func completeLength(r io.ReaderAt, size int64) (int64, error) {
	const chunk = 64 << 10
	buf := make([]byte, min(size, chunk))
	end := size
	for end > 0 {
		n := min(end, int64(len(buf)))
		start := end - n
		_, err := r.ReadAt(buf[:n], start)
		if errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("%w: journal shrank while being read", backupstore.ErrSourceChanged)
		}
		if err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}
