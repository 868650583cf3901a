package backupstore

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func newLayout(t *testing.T, m *Manifest) []byte {
	t.Helper()
	n := m.DataFiles()
	m.DataFileCount = &n
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// failingReader fails every read: what follows a summary the reader must
// not need.
type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("read past the summary") }

func TestReadManifestSummary(t *testing.T) {
	m := validManifest()
	for i := range 40 {
		m.Files = append(m.Files, File{Path: "data/journal/more-" + strings.Repeat("x", i), Size: 1, Mode: 0o640, SHA256: strings.Repeat("ab", 32)})
	}
	fresh := newLayout(t, validManifest())
	summaryEnd := bytes.Index(fresh, []byte(`"config"`))
	old := oldLayout(t, m)
	mutated := func(mutate func(*Manifest)) []byte {
		c := validManifest()
		mutate(c)
		return newLayout(t, c)
	}
	for _, tc := range []struct {
		name  string
		in    io.Reader
		limit int64
		files int
		want  error
	}{
		{"summary first, nothing after it read", io.MultiReader(bytes.NewReader(fresh[:summaryEnd]), failingReader{}), 1 << 20, 1, nil},
		{"older layout, files counted", bytes.NewReader(old), 1 << 20, 41, nil},
		{"older layout past the limit", bytes.NewReader(old), int64(len(old)) / 2, 0, errManifestTooLarge},
		{"older layout, the limit just after its archive", bytes.NewReader(old), int64(len(old)) - 2, 41, nil},
		{"summary first within a small limit", bytes.NewReader(fresh), int64(summaryEnd) + 64, 1, nil},
		{"format 2", bytes.NewReader(mutated(func(m *Manifest) { m.FormatVersion = 2 })), 1 << 20, 0, ErrUnknownFormat},
		{"no version", strings.NewReader(`{"compression":"gzip"}`), 1 << 20, 0, ErrUnknownFormat},
		{"not an object", strings.NewReader(`[1,2]`), 1 << 20, 0, ErrUnknownFormat},
		{"not JSON", strings.NewReader("PK\x03\x04"), 1 << 20, 0, ErrUnknownFormat},
		{"bad compression", bytes.NewReader(mutated(func(m *Manifest) { m.Compression = "zstd" })), 1 << 20, 0, ErrCorruptArchive},
		{"archive name", bytes.NewReader(mutated(func(m *Manifest) { m.Archive.Name = "data.tar" })), 1 << 20, 0, ErrCorruptArchive},
		{"archive sha", bytes.NewReader(mutated(func(m *Manifest) { m.Archive.SHA256 = "xyz" })), 1 << 20, 0, ErrCorruptArchive},
		{"a source no Echo has", bytes.NewReader(mutated(func(m *Manifest) { m.Source.Name = strings.Repeat("n", 300) })), 1 << 20, 0, ErrCorruptArchive},
		{"cut short within the limit", bytes.NewReader(old[:len(old)/2]), 1 << 20, 0, ErrCorruptArchive},
		{"a file list that is no list", strings.NewReader(`{"formatVersion":1,"files":{}}`), 1 << 20, 0, ErrCorruptArchive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := readManifestSummary(tc.in, tc.limit)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v; want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			if s.FormatVersion != FormatVersion || !s.CreatedAt.Equal(m.CreatedAt) || s.Source != m.Source ||
				s.Compression != m.Compression || s.Archive != m.Archive || s.DataFiles != tc.files {
				t.Errorf("summary %+v; want the manifest's with %d data files", s, tc.files)
			}
		})
	}
}

// endlessFiles is a manifest of the older layout whose list of files
// never ends, counting what is read of it.
type endlessFiles struct {
	head []byte
	// at is the position in the entry being sent.
	at   int
	read int64
}

var endlessEntry = []byte(`{"path":"data/f","size":1,"mode":"0640","sha256":"` + strings.Repeat("ab", 32) + `"},`)

func (e *endlessFiles) Read(p []byte) (int, error) {
	n := copy(p, e.head)
	e.head = e.head[n:]
	for n < len(p) {
		c := copy(p[n:], endlessEntry[e.at:])
		e.at = (e.at + c) % len(endlessEntry)
		n += c
	}
	e.read += int64(n)
	return n, nil
}

// TestReadManifestSummaryOfAnEndlessManifest: a manifest that never ends
// is read up to the limit, not further, and reported too large.
func TestReadManifestSummaryOfAnEndlessManifest(t *testing.T) {
	in := &endlessFiles{head: []byte(`{"formatVersion":1,"createdAt":"2026-01-02T03:04:05Z","source":{"namespace":"a","name":"b"},"config":{},"files":[`)}
	const limit = 1 << 20
	s, err := readManifestSummary(in, limit)
	if !errors.Is(err, errManifestTooLarge) || !strings.Contains(err.Error(), "a restore reads it whole") {
		t.Fatalf("error %v; want errManifestTooLarge", err)
	}
	if in.read > limit+1 {
		t.Errorf("read %d bytes of the manifest; want at most %d", in.read, limit+1)
	}
	if s.Source.Name != "b" || s.CreatedAt.IsZero() {
		t.Errorf("what came before the files: %+v", s)
	}
}

// TestReadManifestSummaryReadError: a failing read is the store's error,
// not a problem of the manifest.
func TestReadManifestSummaryReadError(t *testing.T) {
	_, err := readManifestSummary(io.MultiReader(strings.NewReader(`{"formatVersion":1,`), failingReader{}), 1<<20)
	if err == nil || errors.Is(err, ErrCorruptArchive) || errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "read past the summary") {
		t.Errorf("error %v; want the reader's", err)
	}
}
