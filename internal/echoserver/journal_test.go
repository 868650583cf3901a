package echoserver

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// openTestJournal opens the journal of instance "web-0" in dir.
func openTestJournal(t *testing.T, dir string) *Journal {
	t.Helper()
	j, err := OpenJournal(dir, "web-0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("OpenJournal: %v", err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func mustAppend(t *testing.T, j *Journal, e Entry) Entry {
	t.Helper()
	got, err := j.Append(e)
	if err != nil {
		t.Fatalf("Append: %v", err)
	}
	return got
}

// readJournal decodes every line of the file strictly: each line must be a
// complete JSON entry with only the known fields, ended by a newline.
func readJournal(t *testing.T, path string) []Entry {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read journal: %v", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("journal does not end with a newline: %q", data)
	}
	var entries []Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var e Entry
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("line %d is not a valid entry: %v: %q", len(entries)+1, err, sc.Bytes())
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan journal: %v", err)
	}
	return entries
}

func journalFile(dir, instance string) string {
	return filepath.Join(dir, journalDirName, instance+journalExt)
}

// writeLines writes a journal file with entries 1..n followed by tail.
func writeLines(t *testing.T, path string, n int, tail string) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		e := NewEntry("POST", fmt.Sprintf("/p%d", i), []byte("x"), "m")
		e.Seq = uint64(i)
		e.Time = time.Unix(int64(i), 0).UTC()
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	intact := b.String()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(intact+tail), 0o640); err != nil {
		t.Fatal(err)
	}
	return intact
}

func TestJournalEntryFormat(t *testing.T) {
	dir := t.TempDir()
	j := openTestJournal(t, dir)
	fixed := time.Date(2025, 3, 4, 5, 6, 7, 891011121, time.FixedZone("X", 3600))
	j.now = func() time.Time { return fixed }

	body := []byte(`{"hello":"world"}`)
	got := mustAppend(t, j, NewEntry("PUT", "/items/7", body, "Hello from Echo"))

	raw, err := os.ReadFile(journalFile(dir, "web-0"))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(bytes.TrimSuffix(raw, []byte("\n")), &fields); err != nil {
		t.Fatalf("line is not JSON: %v: %q", err, raw)
	}
	sum := sha256.Sum256(body)
	want := map[string]any{
		"seq":        float64(1),
		"time":       "2025-03-04T04:06:07.891011121Z",
		"method":     "PUT",
		"path":       "/items/7",
		"bodySize":   float64(len(body)),
		"bodySha256": hex.EncodeToString(sum[:]),
		"message":    "Hello from Echo",
	}
	if len(fields) != len(want) {
		t.Errorf("line has fields %v, want exactly %v", fields, want)
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("field %q = %v, want %v", k, fields[k], v)
		}
	}
	if got.Seq != 1 || !got.Time.Equal(fixed) {
		t.Errorf("Append returned seq %d time %v, want 1 and %v", got.Seq, got.Time, fixed)
	}
	if _, err := time.Parse(time.RFC3339Nano, fields["time"].(string)); err != nil {
		t.Errorf("time is not RFC 3339: %v", err)
	}
}

func TestJournalSequenceContinuesAfterReopen(t *testing.T) {
	for _, before := range []int{0, 1, 5} {
		t.Run(fmt.Sprintf("%d entries before restart", before), func(t *testing.T) {
			dir := t.TempDir()
			first := openTestJournal(t, dir)
			for range before {
				mustAppend(t, first, NewEntry("POST", "/", nil, "m"))
			}
			if err := first.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}

			second := openTestJournal(t, dir)
			if got := second.Seq(); got != uint64(before) {
				t.Fatalf("Seq after reopen = %d, want %d", got, before)
			}
			e := mustAppend(t, second, NewEntry("POST", "/after", nil, "m"))
			if e.Seq != uint64(before+1) {
				t.Errorf("first entry after reopen has seq %d, want %d", e.Seq, before+1)
			}
			entries := readJournal(t, journalFile(dir, "web-0"))
			if len(entries) != before+1 {
				t.Fatalf("journal has %d lines, want %d", len(entries), before+1)
			}
			for i, e := range entries {
				if e.Seq != uint64(i+1) {
					t.Errorf("line %d has seq %d", i+1, e.Seq)
				}
			}
		})
	}
}

func TestJournalTruncatesTornLine(t *testing.T) {
	tests := []struct {
		name     string
		complete int
		tail     string
	}{
		{name: "half written entry", complete: 2, tail: `{"seq":3,"time":"2025-`},
		{name: "zero filled tail", complete: 2, tail: "\x00\x00\x00\x00\x00\x00"},
		{name: "entry missing its newline", complete: 3, tail: `{"seq":4,"time":"2025-01-01T00:00:00Z","method":"GET","path":"/","bodySize":0,"bodySha256":"","message":"m"}`},
		{name: "torn first line", complete: 0, tail: `{"se`},
		{name: "torn line longer than a scan chunk", complete: 1, tail: `{"seq":2,"path":"` + strings.Repeat("p", 3*tailChunk)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := journalFile(dir, "web-0")
			intact := writeLines(t, path, tt.complete, tt.tail)

			var logs bytes.Buffer
			j, err := OpenJournal(dir, "web-0", slog.New(slog.NewJSONHandler(&logs, nil)))
			if err != nil {
				t.Fatalf("OpenJournal: %v", err)
			}
			t.Cleanup(func() { _ = j.Close() })

			if got, _ := os.ReadFile(path); string(got) != intact {
				t.Fatalf("file after recovery has %d bytes, want the %d intact bytes", len(got), len(intact))
			}
			if !strings.Contains(logs.String(), "truncating torn journal line") ||
				!strings.Contains(logs.String(), fmt.Sprintf(`"bytes":%d`, len(tt.tail))) {
				t.Errorf("torn line was not logged with its size; logs: %s", logs.String())
			}
			if got := j.Seq(); got != uint64(tt.complete) {
				t.Errorf("Seq = %d, want %d", got, tt.complete)
			}
			e := mustAppend(t, j, NewEntry("GET", "/next", nil, "m"))
			if e.Seq != uint64(tt.complete+1) {
				t.Errorf("next seq = %d, want %d", e.Seq, tt.complete+1)
			}
			if n := len(readJournal(t, path)); n != tt.complete+1 {
				t.Errorf("journal has %d lines, want %d", n, tt.complete+1)
			}
		})
	}
}

func TestJournalRefusesCorruptLastLine(t *testing.T) {
	tests := []struct {
		name string
		last string
	}{
		{name: "not JSON", last: "garbage\n"},
		{name: "no sequence number", last: `{"method":"GET"}` + "\n"},
		{name: "zero filled line", last: "\x00\x00\x00\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := journalFile(dir, "web-0")
			intact := writeLines(t, path, 2, tt.last)

			_, err := OpenJournal(dir, "web-0", slog.New(slog.DiscardHandler))
			if !errors.Is(err, ErrCorruptJournal) {
				t.Fatalf("OpenJournal error = %v, want ErrCorruptJournal", err)
			}
			if got, _ := os.ReadFile(path); string(got) != intact+tt.last {
				t.Error("a corrupt journal was modified; it must be left for inspection")
			}
		})
	}
}

func TestJournalConcurrentAppends(t *testing.T) {
	const n = 64
	dir := t.TempDir()
	j := openTestJournal(t, dir)

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			// Long paths make interleaved writes easy to detect.
			path := "/" + strings.Repeat(fmt.Sprintf("%02d", i), 2048)
			if _, err := j.Append(NewEntry("POST", path, []byte(path), "m")); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Append: %v", err)
	}

	entries := readJournal(t, journalFile(dir, "web-0"))
	if len(entries) != n {
		t.Fatalf("journal has %d lines, want %d", len(entries), n)
	}
	seen := make(map[uint64]bool)
	for i, e := range entries {
		if e.Seq != uint64(i+1) {
			t.Errorf("line %d has seq %d; sequence must follow file order", i+1, e.Seq)
		}
		sum := sha256.Sum256([]byte(e.Path))
		if e.BodySHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("line %d: body hash does not belong to its path", i+1)
		}
		seen[e.Seq] = true
	}
	if len(seen) != n {
		t.Errorf("%d distinct sequence numbers, want %d", len(seen), n)
	}
}

func TestJournalReopensLongLines(t *testing.T) {
	dir := t.TempDir()
	j := openTestJournal(t, dir)
	long := "/" + strings.Repeat("a", 3*tailChunk)
	mustAppend(t, j, NewEntry("GET", long, nil, "m"))
	mustAppend(t, j, NewEntry("GET", long, nil, "m"))
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if got := openTestJournal(t, dir).Seq(); got != 2 {
		t.Errorf("Seq after reopening lines longer than a scan chunk = %d, want 2", got)
	}
}

func TestJournalAfterClose(t *testing.T) {
	j := openTestJournal(t, t.TempDir())
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := j.Append(NewEntry("GET", "/", nil, "m")); !errors.Is(err, ErrJournalClosed) {
		t.Errorf("Append after Close = %v, want ErrJournalClosed", err)
	}
	if err := j.Healthy(); !errors.Is(err, ErrJournalClosed) {
		t.Errorf("Healthy after Close = %v, want ErrJournalClosed", err)
	}
	if _, _, err := j.Snapshot(""); !errors.Is(err, ErrJournalClosed) {
		t.Errorf("Snapshot after Close = %v, want ErrJournalClosed", err)
	}
}

func TestJournalFailedWriteStopsJournal(t *testing.T) {
	dir := t.TempDir()
	j := openTestJournal(t, dir)
	mustAppend(t, j, NewEntry("GET", "/", nil, "m"))
	// Lose the file underneath the journal: writes and the rollback fail.
	_ = j.f.Close()

	if _, err := j.Append(NewEntry("GET", "/lost", nil, "m")); err == nil {
		t.Fatal("Append on a broken file succeeded")
	}
	if err := j.Healthy(); err == nil {
		t.Error("Healthy = nil after a failed write that could not be rolled back")
	}
	if _, err := j.Append(NewEntry("GET", "/later", nil, "m")); err == nil {
		t.Error("Append succeeded on a journal in an unknown state")
	}
	if got := j.Seq(); got != 1 {
		t.Errorf("Seq = %d after failed appends, want 1", got)
	}
}

func TestJournalSnapshot(t *testing.T) {
	dir := t.TempDir()
	j := openTestJournal(t, dir)
	mustAppend(t, j, NewEntry("POST", "/a", []byte("1"), "m"))
	mustAppend(t, j, NewEntry("POST", "/b", []byte("2"), "m"))
	own, err := os.ReadFile(journalFile(dir, "web-0"))
	if err != nil {
		t.Fatal(err)
	}
	// Another instance sharing the directory, caught mid-write.
	other := writeLines(t, journalFile(dir, "web-1"), 3, `{"seq":4,"ti`)
	// A file next to the journal directory that must stay unreachable.
	if err := os.WriteFile(filepath.Join(dir, "secret.jsonl"), []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "secret.jsonl"), journalFile(dir, "link")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		instance string
		want     string
		wantErr  error // nil: success; errAny: any error
	}{
		{name: "own journal", instance: "", want: string(own)},
		{name: "own journal by name", instance: "web-0", want: string(own)},
		{name: "other instance without torn tail", instance: "web-1", want: other},
		{name: "missing instance", instance: "web-9", wantErr: fs.ErrNotExist},
		{name: "traversal is sanitised", instance: "../secret", wantErr: fs.ErrNotExist},
		{name: "symlink out of the directory", instance: "link", wantErr: errAny},
		{name: "overlong name", instance: strings.Repeat("x", 300), wantErr: ErrInvalidInstance},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, size, err := j.Snapshot(tt.instance)
			if tt.wantErr != nil {
				if err == nil {
					_ = f.Close()
					t.Fatalf("Snapshot(%q) succeeded, want error", tt.instance)
				}
				if !errors.Is(tt.wantErr, errAny) && !errors.Is(err, tt.wantErr) {
					t.Fatalf("Snapshot(%q) error = %v, want %v", tt.instance, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Snapshot(%q): %v", tt.instance, err)
			}
			defer func() { _ = f.Close() }()
			got, err := io.ReadAll(io.NewSectionReader(f, 0, size))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Snapshot(%q) content = %q, want %q", tt.instance, got, tt.want)
			}
		})
	}
}

// errAny marks test cases that expect some error without caring which.
var errAny = errors.New("any error")
