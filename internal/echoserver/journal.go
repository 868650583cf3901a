package echoserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

const (
	journalDirName  = "journal"
	journalExt      = ".jsonl"
	journalDirPerm  = 0o750
	journalFilePerm = 0o640
	// tailChunk is how much of the file is read per step when scanning
	// backwards for line boundaries.
	tailChunk = 64 << 10
	// tornLogLimit caps how many bytes of a torn line are quoted in the log.
	tornLogLimit = 256
)

var (
	// ErrJournalClosed is returned by a Journal after Close.
	ErrJournalClosed = errors.New("journal closed")
	// ErrCorruptJournal reports a journal whose last complete line is not a
	// valid entry. It is never repaired automatically.
	ErrCorruptJournal = errors.New("corrupt journal")
)

// Entry is one line of the journal file.
type Entry struct {
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"` // UTC, encoded as RFC 3339 with nanoseconds
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	BodySize   int64     `json:"bodySize"`
	BodySHA256 string    `json:"bodySha256"` // lowercase hex
	Message    string    `json:"message"`
}

// NewEntry describes an echoed request. Append assigns Seq and Time.
func NewEntry(method, path string, body []byte, message string) Entry {
	sum := sha256.Sum256(body)
	return Entry{
		Method:     method,
		Path:       path,
		BodySize:   int64(len(body)),
		BodySHA256: hex.EncodeToString(sum[:]),
		Message:    message,
	}
}

// Journal is a durable append-only log of entries stored as JSON lines in
// <data-dir>/journal/<instance>.jsonl. Every Append is written and fsync'ed
// before it returns. A Journal is safe for concurrent use.
type Journal struct {
	root *os.Root // the journal directory; all file access goes through it
	name string   // this instance's file name inside root
	now  func() time.Time

	mu   sync.Mutex
	f    *os.File // nil once closed
	size int64    // bytes of complete, synced lines
	seq  uint64   // sequence number of the last entry
	err  error    // sticky failure: the file can no longer be trusted
}

// OpenJournal opens (creating if needed) the journal of instance under
// dataDir. An existing file is reopened for appending and its sequence
// continues from the last complete line; a torn final line left by a crash
// is truncated away and logged.
func OpenJournal(dataDir, instance string, log *slog.Logger) (*Journal, error) {
	name, err := SanitizeInstance(instance)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(dataDir, journalDirName)
	if err := os.MkdirAll(dir, journalDirPerm); err != nil {
		return nil, fmt.Errorf("create journal directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open journal directory: %w", err)
	}
	j := &Journal{root: root, name: name + journalExt, now: time.Now}
	if err := j.open(log); err != nil {
		_ = root.Close()
		return nil, err
	}
	return j, nil
}

func (j *Journal) open(log *slog.Logger) error {
	f, err := j.root.OpenFile(j.name, os.O_RDWR|os.O_CREATE|os.O_APPEND, journalFilePerm)
	if err != nil {
		return fmt.Errorf("open journal file: %w", err)
	}
	size, seq, err := recoverTail(f, log)
	if err == nil {
		err = syncDir(j.root) // make the file's directory entry durable
	}
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("journal %s: %w", j.Path(), err)
	}
	j.f, j.size, j.seq = f, size, seq
	return nil
}

// Path returns the journal file's path.
func (j *Journal) Path() string {
	return filepath.Join(j.root.Name(), j.name)
}

// Seq returns the sequence number of the last entry, 0 when empty.
func (j *Journal) Seq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// Size returns the bytes of complete, synced entries in this instance's
// file.
func (j *Journal) Size() int64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.size
}

// Append stamps e with the next sequence number and the current time, then
// writes and fsyncs it as one line. It returns the stored entry. On failure
// the file is rolled back so that no partial line remains.
func (j *Journal) Append(e Entry) (Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := j.usable(); err != nil {
		return Entry{}, err
	}
	e.Seq = j.seq + 1
	e.Time = j.now().UTC()
	line, err := json.Marshal(e)
	if err != nil {
		return Entry{}, fmt.Errorf("encode journal entry: %w", err)
	}
	if err := j.write(append(line, '\n')); err != nil {
		return Entry{}, err
	}
	j.seq = e.Seq
	return e, nil
}

// Healthy reports why the journal cannot take entries, or nil if it can.
func (j *Journal) Healthy() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.usable()
}

// Close closes the journal file. Entries are already durable, so nothing is
// lost. Close is idempotent.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	var errs []error
	if err := j.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close journal file: %w", err))
	}
	if err := j.root.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close journal directory: %w", err))
	}
	j.f = nil
	return errors.Join(errs...)
}

// Snapshot opens the journal of instance for reading (this journal's own
// file when instance is empty) and returns it with the length of its
// complete lines; only that many bytes should be read. instance is
// sanitised like Config.Instance. The caller closes the file.
func (j *Journal) Snapshot(instance string) (*os.File, int64, error) {
	name := j.name
	if instance != "" {
		safe, err := SanitizeInstance(instance)
		if err != nil {
			return nil, 0, err
		}
		name = safe + journalExt
	}
	if err := j.Healthy(); errors.Is(err, ErrJournalClosed) {
		return nil, 0, err
	}
	f, err := j.root.Open(name)
	if err != nil {
		return nil, 0, fmt.Errorf("open journal: %w", err)
	}
	size, err := j.readableSize(name, f)
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// readableSize is the committed size for this instance's own file and the
// length up to the last newline for files written by other instances.
func (j *Journal) readableSize(name string, f *os.File) (int64, error) {
	if name == j.name {
		j.mu.Lock()
		defer j.mu.Unlock()
		return j.size, nil
	}
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat journal: %w", err)
	}
	return completeSize(f, info.Size())
}

func (j *Journal) usable() error {
	if j.f == nil {
		return ErrJournalClosed
	}
	return j.err
}

// write appends line and fsyncs it; j.mu must be held.
func (j *Journal) write(line []byte) error {
	if _, err := j.f.Write(line); err != nil {
		return j.fail(fmt.Errorf("write journal: %w", err), false)
	}
	if err := j.f.Sync(); err != nil {
		// After a failed fsync the kernel may have dropped the dirty pages,
		// so the file's content can no longer be trusted.
		return j.fail(fmt.Errorf("sync journal: %w", err), true)
	}
	j.size += int64(len(line))
	return nil
}

// fail truncates the file back to its last committed size so that no
// partial line stays behind. The journal stops taking entries when the
// failure is fatal or the rollback fails too.
func (j *Journal) fail(err error, fatal bool) error {
	if rerr := j.f.Truncate(j.size); rerr != nil {
		err = fmt.Errorf("%w (rollback failed: %w)", err, rerr)
		fatal = true
	}
	if fatal {
		j.err = err
	}
	return err
}

// recoverTail drops a torn final line (bytes after the last newline) and
// returns the size of the intact prefix and the sequence number of its last
// entry.
func recoverTail(f *os.File, log *slog.Logger) (int64, uint64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("stat: %w", err)
	}
	size := info.Size()
	intact, err := completeSize(f, size)
	if err != nil {
		return 0, 0, err
	}
	if intact < size {
		if err := truncateTorn(f, intact, size, log); err != nil {
			return 0, 0, err
		}
	}
	seq, err := lastSeq(f, intact)
	if err != nil {
		return 0, 0, err
	}
	return intact, seq, nil
}

func truncateTorn(f *os.File, intact, size int64, log *slog.Logger) error {
	attrs := []any{"file", f.Name(), "offset", intact, "bytes", size - intact}
	torn := make([]byte, min(size-intact, tornLogLimit))
	if err := readFullAt(f, torn, intact); err != nil {
		attrs = append(attrs, "readError", err)
	} else {
		attrs = append(attrs, "tornPrefix", string(torn))
	}
	log.Warn("truncating torn journal line left by an earlier crash", attrs...)
	if err := f.Truncate(intact); err != nil {
		return fmt.Errorf("truncate torn line: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync after truncating torn line: %w", err)
	}
	return nil
}

// lastSeq decodes the last complete line of the first intact bytes of r.
func lastSeq(r io.ReaderAt, intact int64) (uint64, error) {
	if intact == 0 {
		return 0, nil
	}
	end := intact - 1 // the final newline
	start, err := lastNewline(r, end)
	if err != nil {
		return 0, err
	}
	start++
	line := make([]byte, end-start)
	if err := readFullAt(r, line, start); err != nil {
		return 0, err
	}
	var e Entry
	if err := json.Unmarshal(line, &e); err != nil {
		return 0, fmt.Errorf("%w: last line at offset %d: %w", ErrCorruptJournal, start, err)
	}
	if e.Seq == 0 {
		return 0, fmt.Errorf("%w: last line at offset %d has no sequence number", ErrCorruptJournal, start)
	}
	return e.Seq, nil
}

// completeSize returns the length of the longest prefix of r[0:size) that
// ends with a newline, i.e. the bytes holding complete lines.
func completeSize(r io.ReaderAt, size int64) (int64, error) {
	nl, err := lastNewline(r, size)
	if err != nil {
		return 0, err
	}
	return nl + 1, nil
}

// lastNewline returns the offset of the last '\n' in r[0:end), or -1.
func lastNewline(r io.ReaderAt, end int64) (int64, error) {
	buf := make([]byte, min(end, tailChunk))
	for end > 0 {
		n := min(end, int64(len(buf)))
		start := end - n
		if err := readFullAt(r, buf[:n], start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

func readFullAt(r io.ReaderAt, buf []byte, off int64) error {
	n, err := r.ReadAt(buf, off)
	if n == len(buf) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("read journal at offset %d: %w", off, err)
}

func syncDir(root *os.Root) error {
	d, err := root.Open(".")
	if err != nil {
		return fmt.Errorf("open journal directory: %w", err)
	}
	if err := d.Sync(); err != nil {
		_ = d.Close()
		return fmt.Errorf("sync journal directory: %w", err)
	}
	if err := d.Close(); err != nil {
		return fmt.Errorf("close journal directory: %w", err)
	}
	return nil
}
