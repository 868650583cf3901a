package datamover

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

// Names the mover itself creates at the top of a data directory. Backups
// skip them and Restore never counts them as data.
const (
	stagingPrefix    = ".echo-restore-staging-"
	preRestorePrefix = ".echo-pre-restore-"
	// lostAndFound is created by mkfs at the root of ext* volumes; it is
	// not data, and unreadable to a non-root mover.
	lostAndFound = "lost+found"
)

// pipeBufferSize is the write buffer between the compressor and the store.
const pipeBufferSize = 256 << 10

// errUploadStopped is how the producer learns that the store stopped
// reading.
var errUploadStopped = errors.New("upload stopped")

// BackupOptions configure Backup.
type BackupOptions struct {
	// DataDir is the data directory to back up; it must exist.
	DataDir string
	// Store receives the backup under Key.
	Store backupstore.Store
	Key   string
	// Compression defaults to CompressionGzip.
	Compression backupstore.Compression
	// Config is stored as config.json in the archive and as the manifest's
	// config; it must be valid JSON. Empty stores {}.
	Config json.RawMessage
	// Source identifies the Echo in the manifest.
	Source backupstore.Source
	// BackupID identifies this backup across retries (the EchoBackup's
	// UID). A retry that finds the complete artifact of the same BackupID
	// under Key returns its manifest instead of failing with
	// ErrAlreadyExists: the earlier attempt stored it and was stopped
	// before it could say so.
	BackupID string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Now stamps the manifest; nil uses time.Now.
	Now func() time.Time
}

// Backup archives o.DataDir and o.Config into o.Store under o.Key and returns
// the manifest, written last. It refuses to overwrite a complete backup
// (ErrAlreadyExists), unless that backup is its own (o.BackupID), which it
// returns as it is. Parts of an upload an earlier attempt left unfinished
// (a mover killed mid-upload) are removed before the upload starts.
//
// The archive is streamed: the data directory is walked in lexical order,
// each file is read once while its SHA-256 is computed, and the tar stream
// goes through parallel gzip and the archive's SHA-256 into Store.Put.
// Memory is bounded and does not depend on the amount of data: the
// parallel gzip writer's blocks in flight (gzipBlocks() × about 2 × 512 KiB
// plus a compressor each), a 1 MiB copy buffer, a 256 KiB pipe buffer, the
// store's own buffers (S3: PartSize × Threads, 16 MiB by default; the
// filesystem store: 1 MiB) and the manifest, which grows with the number of
// files (about 150 bytes each). On two cores that is about 30 MiB of live
// heap with S3 (see docs/benchmarks.md).
//
// Live data: a *.jsonl file is captured up to its last complete line at the
// time it is opened, so a line being appended is never captured half
// written; other files are captured as read. Files that vanish before they
// are opened are skipped; a file that shrinks while being read fails the
// backup with ErrSourceChanged (retryable). Only regular files and
// directories are backed up: other entries (symlinks, sockets, devices) are
// skipped with a warning.
func Backup(ctx context.Context, o BackupOptions) (*backupstore.Manifest, error) {
	b, err := newBackup(o)
	if err != nil {
		return nil, err
	}
	return b.run(ctx)
}

type backup struct {
	BackupOptions
	root    string
	config  []byte
	log     *slog.Logger
	skipped int
}

func newBackup(o BackupOptions) (*backup, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("%w: no store", backupstore.ErrInvalidArgument)
	}
	if err := backupstore.CheckKey(o.Key); err != nil {
		return nil, err
	}
	c, err := backupstore.ParseCompression(string(o.Compression))
	if err != nil {
		return nil, err
	}
	o.Compression = c
	config, err := compactConfig(o.Config)
	if err != nil {
		return nil, err
	}
	if o.DataDir == "" {
		return nil, fmt.Errorf("%w: no data directory", backupstore.ErrInvalidArgument)
	}
	// A data directory reached through a symlink (a mount point, say) is
	// walked where it really is: the walk does not follow symlinks.
	root, err := filepath.Abs(o.DataDir)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: data directory: %w", backupstore.ErrInvalidArgument, err)
	}
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("%w: data directory: %w", backupstore.ErrInvalidArgument, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%w: data directory %s is not a directory", backupstore.ErrInvalidArgument, root)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &backup{BackupOptions: o, root: root, config: config, log: log}, nil
}

// compactConfig validates the caller's configuration and compacts it.
func compactConfig(raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return []byte("{}"), nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("%w: config is not valid JSON: %w", backupstore.ErrInvalidArgument, err)
	}
	return buf.Bytes(), nil
}

func (b *backup) run(ctx context.Context) (*backupstore.Manifest, error) {
	manifestKey := backupstore.ManifestKey(b.Key)
	// Checking for an earlier backup also proves the credentials and the
	// bucket before any data is read.
	switch _, err := b.Store.Stat(ctx, manifestKey); {
	case err == nil:
		return b.earlierAttempt(ctx)
	case !errors.Is(err, backupstore.ErrNotFound):
		return nil, err
	}
	b.log.Info("store reachable: no backup under the key yet", "location", b.Store.Location(b.Key))
	start := time.Now()
	archiveKey := backupstore.ArchiveKey(b.Key, b.Compression)
	if err := backupstore.AbortIncompleteUpload(ctx, b.Store, archiveKey); err != nil {
		return nil, err
	}
	b.log.Info("backup started", "dataDir", b.root, "location", b.Store.Location(archiveKey), "compression", string(b.Compression))

	m, err := b.upload(ctx, archiveKey)
	if err != nil {
		return nil, err
	}
	b.log.Info("archive written", "location", b.Store.Location(archiveKey), "archiveBytes", m.Archive.Size,
		"sha256", m.Archive.SHA256, "seconds", time.Since(start).Seconds())
	encoded, err := m.Encode()
	if err != nil {
		return nil, err
	}
	if err := b.Store.Put(ctx, manifestKey, bytes.NewReader(encoded)); err != nil {
		return nil, err
	}
	b.log.Info("manifest written", "location", b.Store.Location(manifestKey))
	elapsed := time.Since(start)
	b.log.Info("backup complete", "location", b.Store.Location(b.Key), "files", m.DataFiles(), "dataBytes", m.DataSize(),
		"archiveBytes", m.Archive.Size, "sha256", m.Archive.SHA256, "skipped", b.skipped,
		"seconds", elapsed.Seconds(), "mbPerSecond", rate(m.DataSize(), elapsed))
	return m, nil
}

// earlierAttempt returns the manifest already stored under the key when an
// earlier attempt of this very backup wrote it, and its archive is there
// whole; otherwise the key belongs to another backup: ErrAlreadyExists.
func (b *backup) earlierAttempt(ctx context.Context) (*backupstore.Manifest, error) {
	exists := fmt.Errorf("%w: %s", backupstore.ErrAlreadyExists, b.Store.Location(backupstore.ManifestKey(b.Key)))
	if b.BackupID == "" {
		return nil, exists
	}
	m, err := Inspect(ctx, InspectOptions{Store: b.Store, Key: b.Key})
	if err != nil {
		if errors.Is(err, backupstore.ErrUnavailable) || errors.Is(err, backupstore.ErrAccessDenied) {
			return nil, err
		}
		return nil, exists
	}
	if m.BackupID != b.BackupID {
		return nil, exists
	}
	b.log.Info("backup already stored by an earlier attempt", "location", b.Store.Location(b.Key), "sha256", m.Archive.SHA256)
	return m, nil
}

// upload streams the archive into the store and returns the manifest
// describing it.
func (b *backup) upload(ctx context.Context, archiveKey string) (*backupstore.Manifest, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	type result struct {
		m   *backupstore.Manifest
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := b.produce(ctx, pw)
		pw.CloseWithError(err) // nil closes with io.EOF
		done <- result{m, err}
	}()
	putErr := b.Store.Put(ctx, archiveKey, pr)
	// Whatever happened, the producer must not block on a reader that is
	// gone: from here on its writes fail.
	pr.CloseWithError(errUploadStopped)
	if putErr != nil {
		cancel()
	}
	res := <-done
	switch {
	case putErr != nil:
		// A producer that failed first closed the pipe with its error, and
		// Put returns the error of its reader unchanged: putErr is the
		// cause either way. The producer's own error is then only the
		// consequence (errUploadStopped or the cancellation).
		return nil, putErr
	case errors.Is(res.err, errUploadStopped):
		return nil, fmt.Errorf("store %s stopped reading before the archive ended", b.Store.Location(archiveKey))
	case res.err != nil:
		return nil, res.err
	}
	return res.m, nil
}

// produce writes the archive to w and returns its manifest.
func (b *backup) produce(ctx context.Context, w io.Writer) (*backupstore.Manifest, error) {
	sum := newHashCounter()
	buffered := bufio.NewWriterSize(io.MultiWriter(w, sum), pipeBufferSize)
	comp, err := newCompressor(buffered, b.Compression)
	if err != nil {
		return nil, err
	}
	aw := newArchiveWriter(comp)
	created := b.Now().UTC()
	err = aw.addFile(backupstore.ConfigName, bytes.NewReader(b.config), int64(len(b.config)), 0o644, created)
	if err == nil {
		err = b.walk(ctx, aw)
	}
	if err == nil {
		err = aw.close()
	}
	if cerr := comp.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("compress: %w", cerr)
	}
	if err == nil {
		err = buffered.Flush()
	}
	if err != nil {
		return nil, err
	}
	m := &backupstore.Manifest{
		FormatVersion: backupstore.FormatVersion,
		CreatedAt:     created,
		Source:        b.Source,
		BackupID:      b.BackupID,
		Compression:   b.Compression,
		Archive:       backupstore.Archive{Name: b.Compression.ArchiveName(), Size: sum.n, SHA256: sum.sum()},
		Config:        b.config,
		Files:         aw.files,
		Directories:   aw.dirs,
	}
	dataFiles := m.DataFiles()
	m.DataFileCount = &dataFiles
	return m, nil
}

// walk adds the data directory's entries in lexical order.
func (b *backup) walk(ctx context.Context, aw *archiveWriter) error {
	return filepath.WalkDir(b.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != b.root && errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return backupstore.ClassifyLocal(fmt.Errorf("walk %s: %w", p, err))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(b.root, p)
		if err != nil {
			return fmt.Errorf("walk %s: %w", p, err)
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if !strings.Contains(rel, "/") && isMoverEntry(rel) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		name := backupstore.DataPrefix + rel
		switch {
		case d.IsDir():
			info, err := d.Info()
			if errors.Is(err, fs.ErrNotExist) {
				return fs.SkipDir
			}
			if err != nil {
				return fmt.Errorf("stat %s: %w", p, err)
			}
			return aw.addDir(name, info.Mode().Perm(), info.ModTime())
		case d.Type().IsRegular():
			return b.addFile(aw, p, name)
		default:
			b.skipped++
			b.log.Warn("skipping an entry that is neither a regular file nor a directory", "path", p, "type", d.Type().String())
			return nil
		}
	})
}

// isMoverEntry reports whether a top-level name of the data directory
// belongs to the mover (or the filesystem) rather than to the data.
func isMoverEntry(name string) bool {
	return name == lostAndFound || strings.HasPrefix(name, stagingPrefix) || strings.HasPrefix(name, preRestorePrefix)
}

// addFile archives one regular file; journals up to their last complete
// line.
func (b *backup) addFile(aw *archiveWriter, p, name string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // removed since it was listed
	}
	if err != nil {
		return backupstore.ClassifyLocal(fmt.Errorf("open %s: %w", p, err))
	}
	defer func() { _ = f.Close() }() // read-only: nothing to lose on close
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is no longer a regular file", backupstore.ErrSourceChanged, p)
	}
	size := info.Size()
	if strings.HasSuffix(name, journalExt) {
		if size, err = completeLength(f, size); err != nil {
			return fmt.Errorf("journal %s: %w", p, err)
		}
	}
	return aw.addFile(name, io.NewSectionReader(f, 0, size), size, info.Mode().Perm(), info.ModTime())
}

// rate returns MB/s (10^6 bytes per second).
func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / 1e6 / d.Seconds()
}
