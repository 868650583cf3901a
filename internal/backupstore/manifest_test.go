package backupstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func validManifest() *Manifest {
	sha := strings.Repeat("ab", 32)
	return &Manifest{
		FormatVersion: FormatVersion,
		CreatedAt:     time.Date(2026, 3, 4, 5, 6, 7, 8, time.UTC),
		Source:        Source{Namespace: "team-a", Name: "echo", UID: "1234", Generation: 7},
		Config:        json.RawMessage(`{"spec":{"replicas":2},"chart":{"version":"0.1.0"}}`),
		Compression:   CompressionGzip,
		Files: []File{
			{Path: ConfigName, Size: 10, Mode: 0o644, SHA256: sha},
			{Path: "data/journal/echo-0.jsonl", Size: 42, Mode: 0o640, SHA256: sha},
		},
		Directories: []Directory{{Path: "data/journal", Mode: 0o750}},
		Archive:     Archive{Name: "data.tar.gz", Size: 99, SHA256: sha},
	}
}

// oldLayout encodes m as manifests were written before the summary came
// first: configuration, compression, files and directories, then the
// archive.
func oldLayout(t *testing.T, m *Manifest) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		FormatVersion int             `json:"formatVersion"`
		CreatedAt     any             `json:"createdAt"`
		Source        Source          `json:"source"`
		Config        json.RawMessage `json:"config"`
		Compression   Compression     `json:"compression"`
		Files         []File          `json:"files"`
		Directories   []Directory     `json:"directories"`
		Archive       Archive         `json:"archive"`
	}{m.FormatVersion, m.CreatedAt, m.Source, m.Config, m.Compression, m.Files, m.Directories, m.Archive})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestManifestRoundTrip(t *testing.T) {
	m := validManifest()
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"formatVersion": 1`, `"mode": "0640"`, `"generation": 7`, `"compression": "gzip"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("encoded manifest lacks %s:\n%s", want, b)
		}
	}
	got, err := DecodeManifest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if !got.CreatedAt.Equal(m.CreatedAt) || got.Source != m.Source || len(got.Files) != 2 || got.Files[1] != m.Files[1] ||
		got.Directories[0] != m.Directories[0] || got.Archive != m.Archive {
		t.Errorf("decoded %+v, want %+v", got, m)
	}
	if !json.Valid(got.Config) || !strings.Contains(string(got.Config), `"replicas":2`) {
		t.Errorf("config = %s", got.Config)
	}
	if got.DataFiles() != 1 || got.DataSize() != 52 {
		t.Errorf("DataFiles = %d, DataSize = %d", got.DataFiles(), got.DataSize())
	}
}

func TestDecodeManifestRejects(t *testing.T) {
	encode := func(mutate func(*Manifest)) string {
		m := validManifest()
		mutate(m)
		b, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := []struct {
		name string
		doc  string
		want error
	}{
		{"version 2", encode(func(m *Manifest) { m.FormatVersion = 2 }), ErrUnknownFormat},
		{"version 0", encode(func(m *Manifest) { m.FormatVersion = 0 }), ErrUnknownFormat},
		{"no version", `{"compression":"gzip"}`, ErrUnknownFormat},
		{"not an object", `[1,2]`, ErrUnknownFormat},
		{"not JSON", `PK\x03\x04`, ErrUnknownFormat},
		{"bad compression", encode(func(m *Manifest) { m.Compression = "zstd" }), ErrCorruptArchive},
		{"archive name", encode(func(m *Manifest) { m.Archive.Name = "data.tar" }), ErrCorruptArchive},
		{"archive sha", encode(func(m *Manifest) { m.Archive.SHA256 = "xyz" }), ErrCorruptArchive},
		{"upper-case sha", encode(func(m *Manifest) { m.Files[1].SHA256 = strings.Repeat("AB", 32) }), ErrCorruptArchive},
		{"negative size", encode(func(m *Manifest) { m.Files[1].Size = -1 }), ErrCorruptArchive},
		{"no config", encode(func(m *Manifest) { m.Files = m.Files[1:] }), ErrCorruptArchive},
		{"duplicate", encode(func(m *Manifest) { m.Files = append(m.Files, m.Files[1]) }), ErrCorruptArchive},
		{"dir and file", encode(func(m *Manifest) { m.Directories[0].Path = "data/journal/echo-0.jsonl" }), ErrCorruptArchive},
		{"traversal", encode(func(m *Manifest) { m.Files[1].Path = "data/../../etc/passwd" }), ErrUnsafePath},
		{"absolute", encode(func(m *Manifest) { m.Files[1].Path = "/etc/passwd" }), ErrUnsafePath},
		{"outside data", encode(func(m *Manifest) { m.Files[1].Path = "journal/echo-0.jsonl" }), ErrUnsafePath},
		{"data itself", encode(func(m *Manifest) { m.Directories[0].Path = "data" }), ErrUnsafePath},
		{"not canonical", encode(func(m *Manifest) { m.Files[1].Path = "data//journal/x" }), ErrUnsafePath},
		{"bad mode", strings.Replace(encode(func(*Manifest) {}), `"0640"`, `"rw-r-----"`, 1), ErrCorruptArchive},
		{"data file count", encode(func(m *Manifest) { m.DataFileCount = new(int); *m.DataFileCount = 2 }), ErrCorruptArchive},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeManifest(strings.NewReader(c.doc))
			if !errors.Is(err, c.want) {
				t.Fatalf("DecodeManifest error = %v, want %v", err, c.want)
			}
		})
	}
}

// TestManifestSummaryComesFirst: a manifest is written with what a
// listing shows before the configuration and the lists of files and
// directories, and decodes the same either way.
func TestManifestSummaryComesFirst(t *testing.T) {
	m := validManifest()
	n := m.DataFiles()
	m.DataFileCount = &n
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	config := bytes.Index(b, []byte(`"config"`))
	for _, field := range []string{`"formatVersion"`, `"createdAt"`, `"source"`, `"compression"`, `"archive"`, `"dataFiles": 1`} {
		if i := bytes.Index(b, []byte(field)); i < 0 || i > config {
			t.Errorf("%s is not before the configuration:\n%s", field, b)
		}
	}
	got, err := DecodeManifest(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if got.DataFileCount == nil || *got.DataFileCount != 1 || got.Archive != m.Archive || len(got.Files) != 2 {
		t.Errorf("decoded %+v", got)
	}
	// A manifest of the older layout, without the count, decodes too.
	old, err := DecodeManifest(bytes.NewReader(oldLayout(t, validManifest())))
	if err != nil || old.DataFileCount != nil || old.DataFiles() != 1 {
		t.Errorf("older layout: %+v, %v", old, err)
	}
}

func TestDecodeManifestUnknownVersionMessage(t *testing.T) {
	_, err := DecodeManifest(strings.NewReader(`{"formatVersion": 2, "whatever": true}`))
	if err == nil || !strings.Contains(err.Error(), "formatVersion 2") || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("error = %v; want it to name both versions", err)
	}
}

func TestCheckArchivePath(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"data/journal/a.jsonl", "data/journal/a.jsonl", true},
		{"data/journal/", "data/journal", true},
		{"config.json", "config.json", true},
		{"data/a..b", "data/a..b", true},
		{"", "", false},
		{"/", "", false},
		{".", "", false},
		{"/etc/passwd", "", false},
		{"../x", "", false},
		{"data/../../x", "", false},
		{"data/..", "", false},
		{"./data/x", "", false},
		{"data//x", "", false},
		{"data/./x", "", false},
		{"data/x\x00y", "", false},
	}
	for _, c := range cases {
		got, err := CheckArchivePath(c.in)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("checkArchivePath(%q) = %q, %v; want %q, ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrUnsafePath) {
			t.Errorf("checkArchivePath(%q) error %v is not ErrUnsafePath", c.in, err)
		}
	}
}

func TestParseCompression(t *testing.T) {
	for in, want := range map[string]Compression{"": CompressionGzip, "gzip": CompressionGzip, "none": CompressionNone} {
		if got, err := ParseCompression(in); err != nil || got != want {
			t.Errorf("ParseCompression(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseCompression("zstd"); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("ParseCompression(zstd) error = %v", err)
	}
}
