package datamover

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/pgzip"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/test/harness/managerbin"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

// managerBin is the manager binary built by TestMain, empty in -short mode.
var managerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if !testing.Short() {
		dir, err := os.MkdirTemp("", "datamover-test-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "temp dir:", err)
			return 1
		}
		defer func() { _ = os.RemoveAll(dir) }()
		if managerBin, err = managerbin.Build(context.Background(), "../..", dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	defer cleanupBenchData()
	return m.Run()
}

// needManager skips tests that run the manager binary in -short mode.
func needManager(tb testing.TB) {
	tb.Helper()
	if managerBin == "" {
		tb.Skip("runs the manager binary, which is not built in -short mode")
	}
}

// treeEntry is what tests compare of a file or directory.
type treeEntry struct {
	Dir  bool
	Mode fs.FileMode
	Data string
}

// writeTree creates files (and their parents) under dir; a name ending in
// "/" is an empty directory.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o750); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns every entry below dir by slash path.
func readTree(t *testing.T, dir string) map[string]treeEntry {
	t.Helper()
	out := map[string]treeEntry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := treeEntry{Dir: d.IsDir(), Mode: info.Mode()}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			e.Data = string(b)
		}
		out[filepath.ToSlash(rel)] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffTrees describes how got differs from want.
func diffTrees(want, got map[string]treeEntry) string {
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+name)
		case g.Dir != w.Dir || g.Mode != w.Mode:
			diffs = append(diffs, fmt.Sprintf("%s: dir=%v mode=%v, want dir=%v mode=%v", name, g.Dir, g.Mode, w.Dir, w.Mode))
		case g.Data != w.Data:
			diffs = append(diffs, fmt.Sprintf("%s: %d bytes differ from the expected %d bytes", name, len(g.Data), len(w.Data)))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, "unexpected "+name)
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "\n")
}

func newFSStore(t *testing.T) *backupstore.FSStore {
	t.Helper()
	s, err := backupstore.NewFSStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// craftEntry is an archive entry of a hand-made backup.
type craftEntry struct {
	Name     string
	Type     byte // tar.TypeReg when zero
	Data     string
	Linkname string
	Mode     int64
	// Unlisted leaves the entry out of the manifest.
	Unlisted bool
}

// craftBackup writes a backup of hand-made entries (config.json is added
// first) under key, with a manifest listing them; mutate may then change
// the manifest before it is stored.
func craftBackup(t testing.TB, s backupstore.Store, key string, c backupstore.Compression, entries []craftEntry, mutate func(*backupstore.Manifest)) *backupstore.Manifest {
	t.Helper()
	config := `{"spec":{"message":"crafted"}}`
	entries = append([]craftEntry{{Name: backupstore.ConfigName, Data: config}}, entries...)
	var buf bytes.Buffer
	var w io.WriteCloser = nopWriteCloser{&buf}
	if c == backupstore.CompressionGzip {
		w = pgzip.NewWriter(&buf)
	}
	tw := tar.NewWriter(w)
	m := &backupstore.Manifest{
		FormatVersion: backupstore.FormatVersion,
		CreatedAt:     time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Source:        backupstore.Source{Namespace: "ns", Name: "echo", UID: "uid-1", Generation: 3},
		Config:        []byte(config),
		Compression:   c,
		Files:         []backupstore.File{},
		Directories:   []backupstore.Directory{},
	}
	for _, e := range entries {
		typ := e.Type
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.Mode
		if mode == 0 {
			mode = 0o640
		}
		hdr := &tar.Header{Name: e.Name, Typeflag: typ, Mode: mode, Linkname: e.Linkname, ModTime: m.CreatedAt}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.Data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.Data); err != nil {
				t.Fatal(err)
			}
		}
		if e.Unlisted {
			continue
		}
		switch typ {
		case tar.TypeReg:
			sum := sha256.Sum256([]byte(e.Data))
			m.Files = append(m.Files, backupstore.File{Path: e.Name, Size: int64(len(e.Data)), Mode: backupstore.Mode(mode), SHA256: hex.EncodeToString(sum[:])})
		case tar.TypeDir:
			m.Directories = append(m.Directories, backupstore.Directory{Path: strings.TrimSuffix(e.Name, "/"), Mode: backupstore.Mode(mode)})
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	m.Archive = backupstore.Archive{Name: c.ArchiveName(), Size: int64(buf.Len()), SHA256: hex.EncodeToString(sum[:])}
	if mutate != nil {
		mutate(m)
	}
	storetest.PutBytes(t, s, backupstore.ArchiveKey(key, c), buf.Bytes())
	encoded, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	storetest.PutBytes(t, s, backupstore.ManifestKey(key), encoded)
	return m
}

// countingStore records which keys were read, by concurrent readers too.
type countingStore struct {
	backupstore.Store
	mu   sync.Mutex
	gets []string
}

func (c *countingStore) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	c.mu.Lock()
	c.gets = append(c.gets, key)
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

// inBothStores runs test as subtests "fs" and "s3", each with a store of
// its own: a directory, and a prefix of a real S3 server's bucket.
func inBothStores(t *testing.T, test func(t *testing.T, s backupstore.Store)) {
	t.Run("fs", func(t *testing.T) { test(t, newFSStore(t)) })
	t.Run("s3", func(t *testing.T) {
		test(t, newTestS3Store(t, s3server.Start(t, testBucket), backupstore.S3Config{Prefix: "echo-backups"}))
	})
}

const testBucket = "backups"

// testCustomerKey is an SSE-C key of 32 bytes; otherCustomerKey another.
var (
	testCustomerKey  = bytes.Repeat([]byte{0x5a}, 32)
	otherCustomerKey = bytes.Repeat([]byte{0xa5}, 32)
)

func newTestS3Store(t *testing.T, srv *s3server.Server, cfg backupstore.S3Config) *backupstore.S3Store {
	t.Helper()
	cfg.Endpoint = cmp.Or(cfg.Endpoint, srv.Endpoint)
	cfg.Bucket = cmp.Or(cfg.Bucket, testBucket)
	cfg.PathStyle = true
	cfg.CAFile = cmp.Or(cfg.CAFile, srv.CAFile)
	s, err := backupstore.NewS3StoreWithCredentials(cfg, srv.AccessKey, srv.SecretKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// randomReader yields n pseudo-random bytes and hides its length, like the
// archive stream.
func randomReader(seed uint64, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{byte(seed)}), n)
}
