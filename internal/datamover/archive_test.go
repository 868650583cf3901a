package datamover

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/internal/backupstore"
)

func TestCompleteLength(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // longer than a scan chunk
	cases := map[string]int64{
		"":                      0,
		"no newline":            0,
		"a\n":                   2,
		"a\nb\n":                4,
		"a\nb":                  2,
		"\n":                    1,
		long + "\n" + long:      int64(len(long)) + 1,
		"a\n" + long:            2,
		long + "\n" + "partial": int64(len(long)) + 1,
	}
	for in, want := range cases {
		got, err := completeLength(strings.NewReader(in), int64(len(in)))
		if err != nil || got != want {
			t.Errorf("completeLength(%d bytes) = %d, %v; want %d", len(in), got, err, want)
		}
	}
	// A file that shrank below the size taken earlier.
	if _, err := completeLength(strings.NewReader("ab"), 10); !errors.Is(err, backupstore.ErrSourceChanged) {
		t.Errorf("completeLength of a shrunk file = %v", err)
	}
}

func TestArchiveWriterDetectsShrinkingFile(t *testing.T) {
	aw := newArchiveWriter(io.Discard)
	err := aw.addFile("data/f", strings.NewReader("short"), 100, 0o640, time.Now())
	if !errors.Is(err, backupstore.ErrSourceChanged) || !backupstore.Retryable(err) {
		t.Fatalf("addFile = %v, want retryable ErrSourceChanged", err)
	}
}

func TestArchiveWriterAndCompression(t *testing.T) {
	content := strings.Repeat("journal line\n", 100000) // spans several gzip blocks
	mtime := time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, c := range []backupstore.Compression{backupstore.CompressionGzip, backupstore.CompressionNone} {
		t.Run(string(c), func(t *testing.T) {
			var buf bytes.Buffer
			sum := newHashCounter()
			comp, err := newCompressor(io.MultiWriter(&buf, sum), c)
			if err != nil {
				t.Fatal(err)
			}
			aw := newArchiveWriter(comp)
			if err := aw.addDir("data/journal", 0o750, mtime); err != nil {
				t.Fatal(err)
			}
			if err := aw.addFile("data/journal/a.jsonl", strings.NewReader(content), int64(len(content)), 0o640, mtime); err != nil {
				t.Fatal(err)
			}
			if err := aw.close(); err != nil {
				t.Fatal(err)
			}
			if err := comp.Close(); err != nil {
				t.Fatal(err)
			}
			if sum.n != int64(buf.Len()) || sum.sum() != sha256Hex(buf.Bytes()) {
				t.Errorf("hash counter saw %d bytes, %s", sum.n, sum.sum())
			}
			if len(aw.files) != 1 || aw.files[0].SHA256 != sha256Hex([]byte(content)) || aw.files[0].Mode != 0o640 ||
				len(aw.dirs) != 1 || aw.dirs[0].Path != "data/journal" {
				t.Errorf("recorded files %+v, dirs %+v", aw.files, aw.dirs)
			}
			got := readTestArchive(t, &buf, c)
			if len(got) != 2 || got["data/journal/"] != "" || got["data/journal/a.jsonl"] != content {
				t.Errorf("archive read back with %d entries", len(got))
			}
		})
	}
}

// readTestArchive decodes an archive into entry name -> content.
func readTestArchive(t *testing.T, r io.Reader, c backupstore.Compression) map[string]string {
	t.Helper()
	dec, err := newDecompressor(r, c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dec.Close() }()
	out := map[string]string{}
	tr := tar.NewReader(dec)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = string(b)
	}
}
