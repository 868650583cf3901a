package datamover

// Tests of the manager's backup, restore, delete and inspect subcommands,
// run as a Job would run them: the real binary, real data written by the echo server,
// a real S3 service (MinIO) or a filesystem store.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/echoserver"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

const moverTimeout = 2 * time.Minute

// moverResult is the outcome of one run of the manager binary: its
// termination log decoded strictly (no unknown member) into the result the
// operator expects of the subcommand.
type moverResult struct {
	code    int
	stderr  string
	term    string // the termination log as written
	success moverprotocol.Archive
	failure moverprotocol.Failure
	// inspection is the result of a successful inspect, deletion of a
	// successful delete.
	inspection moverprotocol.Inspection
	deletion   moverprotocol.Deletion
}

// moverProcess is one run of the manager binary under way.
type moverProcess struct {
	cmd    *exec.Cmd
	term   string // the termination log
	stderr *bytes.Buffer
	cancel context.CancelFunc
}

// startMover starts "manager <args>" with only env (and PATH) in its
// environment.
func startMover(t *testing.T, env []string, args ...string) *moverProcess {
	t.Helper()
	needManager(t)
	p := &moverProcess{term: filepath.Join(t.TempDir(), "termination-log"), stderr: &bytes.Buffer{}}
	var ctx context.Context
	ctx, p.cancel = context.WithTimeout(context.Background(), moverTimeout)
	p.cmd = exec.CommandContext(ctx, managerBin, append(args, "--termination-log", p.term)...)
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		p.cancel()
		t.Fatalf("starting manager %s: %v", args[0], err)
	}
	t.Cleanup(p.cancel)
	return p
}

// runMover runs "manager <args>" with only env (and PATH) in its
// environment and decodes its termination log.
func runMover(t *testing.T, env []string, args ...string) moverResult {
	t.Helper()
	return startMover(t, env, args...).result(t, args[0])
}

// result waits for the run to end and decodes its termination log.
func (p *moverProcess) result(t *testing.T, command string) moverResult {
	t.Helper()
	err := p.cmd.Wait()
	p.cancel()
	term := p.term
	res := moverResult{code: p.cmd.ProcessState.ExitCode(), stderr: p.stderr.String()}
	if err != nil && res.code <= 0 {
		t.Fatalf("manager %s: %v\n%s", command, err, res.stderr)
	}
	b, err := os.ReadFile(term)
	if err != nil {
		t.Fatalf("manager %s wrote no termination log: %v\n%s", command, err, res.stderr)
	}
	res.term = string(b)
	if len(b) > 4096 {
		t.Errorf("termination log is %d bytes, more than Kubernetes keeps", len(b))
	}
	target := any(&res.success)
	switch {
	case res.code != 0:
		target = &res.failure
	case command == string(moverprotocol.Inspect):
		target = &res.inspection
	case command == string(moverprotocol.Delete):
		target = &res.deletion
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(target); err != nil {
		t.Fatalf("termination log %q: %v", b, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
		if line != "" && !json.Valid([]byte(line)) {
			t.Errorf("stderr line is not a JSON log record: %s", line)
		}
	}
	return res
}

// expectFailure checks a failed run's exit code and termination log.
func expectFailure(t *testing.T, res moverResult, reason string, retryable bool) {
	t.Helper()
	// The Jobs' pod failure policy fails a Job at once on exit code 2.
	wantCode := 2
	if retryable {
		wantCode = 1
	}
	if res.code != wantCode {
		t.Fatalf("exit code %d, want %d; termination log %s\n%s", res.code, wantCode, res.term, res.stderr)
	}
	f := res.failure
	if string(f.Reason) != reason || f.Retryable != retryable || f.Error == "" || !strings.Contains(res.term, `"retryable":`) {
		t.Fatalf("termination log %s; want reason %s, retryable %v", res.term, reason, retryable)
	}
	t.Logf("termination log: %s", strings.TrimSpace(res.term))
}

// s3Flags are the storage flags a Job uses for srv.
func s3Flags(srv *s3server.Server, bucket string) []string {
	flags := []string{"--s3-endpoint", srv.Endpoint, "--s3-region", s3server.Region, "--s3-bucket", bucket,
		"--s3-prefix", "echo-backups", "--s3-path-style"}
	if srv.CAFile != "" {
		flags = append(flags, "--s3-ca-file", srv.CAFile)
	}
	return flags
}

// journalWithEchoServer runs the echo server as instance on dataDir,
// sends it n requests and shuts it down. It returns the journaled entries.
func journalWithEchoServer(t *testing.T, dataDir, instance string, n int) []echoserver.Entry {
	t.Helper()
	srv, err := echoserver.New(echoserver.Config{Listen: "127.0.0.1:0", Instance: instance, DataDir: dataDir,
		Message: "hello from " + instance, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	client := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + ln.Addr().String()
	for i := range n {
		body := strings.Repeat(fmt.Sprintf("request %d of %s; ", i, instance), 1+i%7)
		resp, err := client.Post(fmt.Sprintf("%s/orders/%d?instance=%s", base, i, instance), "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("echo answered %d", resp.StatusCode)
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	entries := readJournal(t, filepath.Join(dataDir, "journal", instance+".jsonl"))
	if len(entries) != n {
		t.Fatalf("journal of %s holds %d entries, want %d", instance, len(entries), n)
	}
	return entries
}

func readJournal(t *testing.T, path string) []echoserver.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	var out []echoserver.Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e echoserver.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// echoData builds a data directory as an Echo's volume holds it: the
// journals of two replicas written by the echo server, plus a 20 MiB file
// of incompressible data so that an upload takes several parts.
func echoData(t *testing.T) (dir string, journals map[string][]echoserver.Entry) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "data")
	journals = map[string][]echoserver.Entry{
		"echo-0": journalWithEchoServer(t, dir, "echo-0", 120),
		"echo-1": journalWithEchoServer(t, dir, "echo-1", 45),
	}
	blob := make([]byte, 20<<20)
	rnd := rand.NewChaCha8([32]byte{7})
	_, _ = rnd.Read(blob)
	writeTree(t, dir, map[string]string{"attachments/blob.bin": string(blob)})
	return dir, journals
}

func writeConfigFile(t *testing.T) (string, string) {
	t.Helper()
	config := `{
  "echo": {"apiVersion": "echo.dev/v1alpha1", "kind": "Echo", "metadata": {"name": "echo", "namespace": "team-a"},
           "spec": {"replicas": 2, "message": "hello", "persistence": {"enabled": true, "size": "1Gi"}}},
  "release": {"chart": "echo", "chartVersion": "0.1.0", "values": {"replicaCount": 2}}
}`
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(config)); err != nil {
		t.Fatal(err)
	}
	return path, compact.String()
}

// TestCLIRoundTrip backs up an echo server's data with the manager binary,
// deletes it, restores it into a new directory and compares every byte.
func TestCLIRoundTrip(t *testing.T) {
	needManager(t)
	srv := s3server.Start(t, testBucket)
	cases := []struct {
		name        string
		compression string
		fs          bool
	}{
		{"s3", "gzip", false},
		{"s3 uncompressed", "none", false},
		{"fs", "gzip", true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := fmt.Sprintf("team-a/echo%d/20260101-000000", i)
			storage := s3Flags(srv, testBucket)
			location := "s3://backups/echo-backups/" + key
			if c.fs {
				root := t.TempDir()
				storage = []string{"--fs-root", root}
				location = filepath.Join(root, key)
			}
			roundTrip(t, srv, storage, location, key, c.compression)
		})
	}
}

// roundTrip runs one backup, deletion and restore through the binary.
func roundTrip(t *testing.T, srv *s3server.Server, storage []string, location, key, compression string) {
	t.Helper()
	dataDir, journals := echoData(t)
	want := readTree(t, dataDir)
	configFile, config := writeConfigFile(t)
	env := srv.Env()

	backup := runMover(t, env, append([]string{"backup", "--data-dir", dataDir, "--key", key,
		"--compression", compression, "--config-file", configFile,
		"--source-namespace", "team-a", "--source-name", "echo", "--source-uid", "0b6f1a52-uid", "--source-generation", "3"},
		storage...)...)
	if backup.code != 0 {
		t.Fatalf("backup failed: %s\n%s", backup.term, backup.stderr)
	}
	s := backup.success
	if s.Location != location || s.Files != 3 || s.Size <= 0 || !strings.HasPrefix(s.Checksum, "sha256:") || len(s.Checksum) != 71 {
		t.Errorf("backup termination log = %s; want location %s and 3 files", backup.term, location)
	}
	if strings.Contains(backup.stderr, srv.SecretKey) || strings.Contains(backup.stderr, srv.AccessKey) {
		t.Error("the backup's logs reveal the credentials")
	}

	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	restored := filepath.Join(t.TempDir(), "new-volume")
	restore := runMover(t, env, append([]string{"restore", "--data-dir", restored, "--key", key}, storage...)...)
	if restore.code != 0 {
		t.Fatalf("restore failed: %s\n%s", restore.term, restore.stderr)
	}
	if restore.success != s {
		t.Errorf("restore termination log %s differs from the backup's %s", restore.term, backup.term)
	}
	if d := diffTrees(want, readTree(t, restored)); d != "" {
		t.Fatalf("restored data differs:\n%s", d)
	}
	for instance, entries := range journals {
		compareJournal(t, instance, entries, readJournal(t, filepath.Join(restored, "journal", instance+".jsonl")))
	}
	checkJournalContinues(t, restored, "echo-1", 46)

	// A restore test's restore reads the restored files back and says so.
	verified := runMover(t, env, append([]string{"restore", "--data-dir", filepath.Join(t.TempDir(), "scratch"), "--key", key, "--verify"}, storage...)...)
	if verified.code != 0 {
		t.Fatalf("restore --verify failed: %s\n%s", verified.term, verified.stderr)
	}
	got := verified.success
	if got.Verified != s.Files {
		t.Errorf("restore --verify verified %d files, want %d", got.Verified, s.Files)
	}
	if got.Verified = 0; got != s {
		t.Errorf("restore --verify termination log %s differs from the backup's %s", verified.term, backup.term)
	}

	// The manifest carries the configuration and the source.
	m := readStoredManifest(t, srv, storage, key)
	if string(m.Config) != config || m.Source != (backupstore.Source{Namespace: "team-a", Name: "echo", UID: "0b6f1a52-uid", Generation: 3}) ||
		string(m.Compression) != compression {
		t.Errorf("manifest config %s, source %+v, compression %s", m.Config, m.Source, m.Compression)
	}
}

// checkJournalContinues appends to a restored journal: the echo server
// takes it back and continues at seq next.
func checkJournalContinues(t *testing.T, dataDir, instance string, next uint64) {
	t.Helper()
	j, err := echoserver.OpenJournal(dataDir, instance, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	e, err := j.Append(echoserver.NewEntry("GET", "/after-restore", nil, "hello"))
	if err != nil || e.Seq != next {
		t.Errorf("append after restore: seq %d, %v; want seq %d", e.Seq, err, next)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func compareJournal(t *testing.T, instance string, want, got []echoserver.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries restored, want %d", instance, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) || g.Seq != w.Seq || g.BodySHA256 != w.BodySHA256 || g.BodySize != w.BodySize ||
			g.Method != w.Method || g.Path != w.Path || g.Message != w.Message {
			t.Fatalf("%s entry %d = %+v, want %+v", instance, i, g, w)
		}
	}
}

// readStoredManifest reads a backup's manifest from the store the flags
// name.
func readStoredManifest(t *testing.T, srv *s3server.Server, storage []string, key string) *backupstore.Manifest {
	t.Helper()
	var store backupstore.Store
	if storage[0] == "--fs-root" {
		s, err := backupstore.NewFSStore(storage[1])
		if err != nil {
			t.Fatal(err)
		}
		store = s
	} else {
		store = newTestS3Store(t, srv, backupstore.S3Config{Prefix: "echo-backups", Encryption: encryptionOf(storage)})
	}
	m, err := backupstore.DecodeManifest(bytes.NewReader(storetest.GetBytes(t, store, backupstore.ManifestKey(key))))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const wrongSecret = "not-the-secret-8d1c2f"

// faultEnv is what the fault tests share: a running S3 service holding
// backups of sampleData, and ways to damage them.
type faultEnv struct {
	srv         *s3server.Server
	store       *backupstore.S3Store
	client      *minio.Client
	source      string   // the data directory backed up
	unreachable string   // an endpoint nothing listens on
	wrongEnv    []string // credentials with a wrong secret
}

func newFaultEnv(t *testing.T) *faultEnv {
	t.Helper()
	needManager(t)
	srv := s3server.Start(t, testBucket)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "http://" + closed.Addr().String()
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	source, _ := sampleData(t)
	return &faultEnv{
		srv:         srv,
		store:       newTestS3Store(t, srv, backupstore.S3Config{Prefix: "echo-backups"}),
		client:      srv.Client(t),
		source:      source,
		unreachable: unreachable,
		wrongEnv:    []string{"AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + wrongSecret},
	}
}

func (f *faultEnv) backupTo(t *testing.T, key string) {
	t.Helper()
	if _, err := Backup(context.Background(), BackupOptions{DataDir: f.source, Store: f.store, Key: key}); err != nil {
		t.Fatal(err)
	}
}

// rewrite replaces the stored object of key with edit's result.
func (f *faultEnv) rewrite(t *testing.T, key string, edit func([]byte) []byte) {
	t.Helper()
	ctx := context.Background()
	name := "echo-backups/" + key
	obj, err := f.client.GetObject(ctx, testBucket, name, minio.GetObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	b = edit(b)
	if _, err := f.client.PutObject(ctx, testBucket, name, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkNoSecret fails when a run's output holds a secret.
func (f *faultEnv) checkNoSecret(t *testing.T, res moverResult) {
	t.Helper()
	for _, secret := range []string{wrongSecret, f.srv.SecretKey} {
		if strings.Contains(res.stderr+res.term, secret) {
			t.Error("output reveals a secret")
		}
	}
}

// TestCLIRestoreFaults runs restores into every fault a Job may meet and
// checks the termination log and that the target is left as it was.
func TestCLIRestoreFaults(t *testing.T) {
	f := newFaultEnv(t)
	cases := []struct {
		name      string
		setup     func(t *testing.T, key string)
		env       []string
		flags     []string // storage flags; default: the test bucket
		reason    string
		retryable bool
	}{
		{name: "wrong credentials", setup: f.backupTo, env: f.wrongEnv, reason: "AccessDenied"},
		{name: "no credentials", setup: f.backupTo, env: []string{}, reason: "InvalidArgument"},
		{name: "unreachable endpoint", setup: f.backupTo, reason: "Unavailable", retryable: true,
			flags: []string{"--s3-endpoint", f.unreachable, "--s3-bucket", testBucket, "--s3-path-style"}},
		{name: "missing bucket", setup: f.backupTo, reason: "BucketNotFound", flags: s3Flags(f.srv, "no-such-bucket")},
		{name: "missing backup", reason: "NotFound"},
		{name: "corrupted archive", reason: "ChecksumMismatch", setup: func(t *testing.T, key string) {
			f.backupTo(t, key)
			f.rewrite(t, backupstore.ArchiveKey(key, backupstore.CompressionGzip), func(b []byte) []byte { b[len(b)/3] ^= 0x01; return b })
		}},
		{name: "truncated archive", reason: "ChecksumMismatch", setup: func(t *testing.T, key string) {
			f.backupTo(t, key)
			f.rewrite(t, backupstore.ArchiveKey(key, backupstore.CompressionGzip), func(b []byte) []byte { return b[:len(b)/2] })
		}},
		{name: "unknown format version", reason: "UnknownFormat", setup: func(t *testing.T, key string) {
			f.backupTo(t, key)
			f.rewrite(t, backupstore.ManifestKey(key), func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"formatVersion": 1`), []byte(`"formatVersion": 2`), 1)
			})
		}},
		{name: "path traversal", reason: "UnsafePath", setup: func(t *testing.T, key string) {
			craftBackup(t, f.store, key, backupstore.CompressionGzip, []craftEntry{
				{Name: "data/journal/echo-0.jsonl", Data: "{\"seq\":1}\n"},
				{Name: "data/../../../escaped.txt", Data: "pwned", Unlisted: true},
			}, nil)
		}},
		{name: "symlink", reason: "UnsafePath", setup: func(t *testing.T, key string) {
			craftBackup(t, f.store, key, backupstore.CompressionGzip, []craftEntry{
				{Name: "data/journal", Type: tar.TypeSymlink, Linkname: "/etc", Unlisted: true},
				{Name: "data/journal/passwd", Data: "pwned"},
			}, nil)
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := fmt.Sprintf("faults/%d", i)
			if c.setup != nil {
				c.setup(t, key)
			}
			env := c.env
			if env == nil {
				env = f.srv.Env()
			}
			flags := c.flags
			if flags == nil {
				flags = s3Flags(f.srv, testBucket)
			}
			parent := t.TempDir()
			target := filepath.Join(parent, "target")
			writeTree(t, target, existingData)
			before := readTree(t, target)
			res := runMover(t, env, append([]string{"restore", "--data-dir", target, "--key", key, "--existing-data", "Replace"}, flags...)...)
			expectFailure(t, res, c.reason, c.retryable)
			assertUntouched(t, target, before)
			if entries, _ := os.ReadDir(parent); len(entries) != 1 {
				t.Errorf("the restore wrote next to the target: %v", entries)
			}
			f.checkNoSecret(t, res)
		})
	}
}

// TestCLIBackupFaults: a failed backup leaves the data and the store as
// they were.
func TestCLIBackupFaults(t *testing.T) {
	f := newFaultEnv(t)
	for _, c := range []struct {
		name      string
		env       []string
		flags     []string
		reason    string
		retryable bool
	}{
		{"wrong credentials", f.wrongEnv, s3Flags(f.srv, testBucket), "AccessDenied", false},
		{"unreachable endpoint", f.srv.Env(), []string{"--s3-endpoint", f.unreachable, "--s3-bucket", testBucket, "--s3-path-style"}, "Unavailable", true},
		{"missing bucket", f.srv.Env(), s3Flags(f.srv, "no-such-bucket"), "BucketNotFound", false},
		{"both stores", f.srv.Env(), append(s3Flags(f.srv, testBucket), "--fs-root", t.TempDir()), "InvalidArgument", false},
		{"no store", f.srv.Env(), nil, "InvalidArgument", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := readTree(t, f.source)
			key := "backup-faults/" + strings.ReplaceAll(c.name, " ", "-")
			res := runMover(t, c.env, append([]string{"backup", "--data-dir", f.source, "--key", key}, c.flags...)...)
			expectFailure(t, res, c.reason, c.retryable)
			assertUntouched(t, f.source, before)
			if objs, err := f.store.List(context.Background(), key); err != nil || len(objs) != 0 {
				t.Errorf("store holds %v (%v) after a failed backup", objs, err)
			}
			f.checkNoSecret(t, res)
		})
	}
}

// TestCLIFilesystemStoreRoot: a backup creates the store's root (a claim's
// subPath) when it is missing; a restore from a missing root fails and
// creates nothing.
func TestCLIFilesystemStoreRoot(t *testing.T) {
	source, _ := sampleData(t)
	claim := t.TempDir()
	root := filepath.Join(claim, "echo", "nested")
	res := runMover(t, nil, "backup", "--data-dir", source, "--key", "k", "--fs-root", root)
	if res.code != 0 {
		t.Fatalf("backup into a missing subPath: exit %d: %s", res.code, res.stderr)
	}
	if info, err := os.Stat(root); err != nil || !info.IsDir() || info.Mode().Perm() != backupstore.FSStoreDirPerm {
		t.Fatalf("the store's root after the backup: %v, %v", info, err)
	}
	missing := filepath.Join(claim, "other")
	res = runMover(t, nil, "restore", "--data-dir", t.TempDir(), "--key", "k", "--fs-root", missing)
	expectFailure(t, res, "NotFound", false)
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a restore created its missing store root: %v", err)
	}
}

// TestCLIExistingData covers both policies for a target holding data.
func TestCLIExistingData(t *testing.T) {
	f := newFaultEnv(t)
	t.Run("Fail", func(t *testing.T) {
		f.backupTo(t, "policy/fail")
		target := t.TempDir()
		writeTree(t, target, existingData)
		before := readTree(t, target)
		res := runMover(t, f.srv.Env(), append([]string{"restore", "--data-dir", target, "--key", "policy/fail"}, s3Flags(f.srv, testBucket)...)...)
		expectFailure(t, res, "TargetNotEmpty", false)
		assertUntouched(t, target, before)
	})
	t.Run("Replace", func(t *testing.T) {
		f.backupTo(t, "policy/replace")
		target := t.TempDir()
		writeTree(t, target, existingData)
		old := readTree(t, target)
		res := runMover(t, f.srv.Env(), append([]string{"restore", "--data-dir", target, "--key", "policy/replace",
			"--existing-data", "Replace"}, s3Flags(f.srv, testBucket)...)...)
		if res.code != 0 {
			t.Fatalf("restore failed: %s\n%s", res.term, res.stderr)
		}
		asides, err := filepath.Glob(filepath.Join(target, preRestorePrefix+"*"))
		if err != nil || len(asides) != 1 {
			t.Fatalf("want one %s* directory, found %v (%v)", preRestorePrefix, asides, err)
		}
		if d := diffTrees(old, readTree(t, asides[0])); d != "" {
			t.Errorf("old data kept aside differs:\n%s", d)
		}
		if !strings.Contains(res.stderr, asides[0]) {
			t.Errorf("the logs do not say where the old data went")
		}
		if got := readTree(t, target); got["private.txt"].Data != "secret-ish" {
			t.Errorf("backup not restored: %v", got)
		}
	})
}

// TestCLIFullDisk fills a small tmpfs: the restore target, then the
// filesystem store of a backup.
func TestCLIFullDisk(t *testing.T) {
	f := newFaultEnv(t)
	f.backupTo(t, "disk/full")
	target := storetest.MountTmpfs(t, "size=1m")
	res := runMover(t, f.srv.Env(), append([]string{"restore", "--data-dir", target, "--key", "disk/full"}, s3Flags(f.srv, testBucket)...)...)
	expectFailure(t, res, "NoSpace", false)
	assertUntouched(t, target, map[string]treeEntry{})

	storeDir := storetest.MountTmpfs(t, "size=1m")
	res = runMover(t, nil, "backup", "--data-dir", f.source, "--key", "disk/full", "--fs-root", storeDir)
	expectFailure(t, res, "NoSpace", false)
	for name, e := range readTree(t, storeDir) {
		if !e.Dir {
			t.Errorf("filesystem store holds %s after a failed backup", name)
		}
	}
}

// TestCLIUsage covers the flag handling that decides what a Job reports.
func TestCLIUsage(t *testing.T) {
	needManager(t)
	notJSON := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(notJSON, []byte("replicas: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"no data dir", []string{"backup", "--key", "k", "--fs-root", "/tmp"}},
		{"no key", []string{"restore", "--data-dir", "/tmp/x", "--fs-root", "/tmp"}},
		{"unknown flag", []string{"backup", "--data-dir", "/tmp/x", "--key", "k", "--fs-root", "/tmp", "--bogus"}},
		{"bad compression", []string{"backup", "--data-dir", t.TempDir(), "--key", "k", "--fs-root", t.TempDir(), "--compression", "zstd"}},
		{"bad policy", []string{"restore", "--data-dir", t.TempDir(), "--key", "k", "--fs-root", t.TempDir(), "--existing-data", "Merge"}},
		{"restore-only flag on backup", []string{"backup", "--data-dir", "/tmp/x", "--key", "k", "--fs-root", "/tmp", "--existing-data", "Replace"}},
		{"bad key", []string{"backup", "--data-dir", t.TempDir(), "--key", "../k", "--fs-root", t.TempDir()}},
		{"endpoint with credentials", []string{"backup", "--data-dir", t.TempDir(), "--key", "k", "--s3-endpoint", "http://AKIAEXAMPLE:hunter2@127.0.0.1:1", "--s3-bucket", "b"}},
		{"config file missing", []string{"backup", "--data-dir", t.TempDir(), "--key", "k", "--fs-root", t.TempDir(), "--config-file", "/dev/null/x"}},
		{"config file is not JSON", []string{"backup", "--data-dir", t.TempDir(), "--key", "k", "--fs-root", t.TempDir(), "--config-file", notJSON}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := runMover(t, []string{"AWS_ACCESS_KEY_ID=AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY=hunter2"}, c.args...)
			expectFailure(t, res, "InvalidArgument", false)
			if strings.Contains(res.term+res.stderr, "hunter2") {
				t.Error("output reveals a secret")
			}
		})
	}
	// Help is not a failure.
	cmd := exec.Command(managerBin, "restore", "-h")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--existing-data") && !strings.Contains(string(out), "-existing-data") {
		t.Errorf("restore -h: %v\n%s", err, out)
	}
}

// TestCLIDelete deletes backups with the manager binary, as the artifact
// deletion Job does: the backup's objects go, nothing else, and running it
// again succeeds.
func TestCLIDelete(t *testing.T) {
	f := newFaultEnv(t)
	fsRoot := t.TempDir()
	fsStore, err := backupstore.NewFSStore(fsRoot)
	if err != nil {
		t.Fatal(err)
	}
	stores := []struct {
		name     string
		store    backupstore.Store
		flags    []string
		location string
	}{
		{"s3", f.store, s3Flags(f.srv, testBucket), "s3://backups/echo-backups/team-a/echo/b1"},
		{"fs", fsStore, []string{"--fs-root", fsRoot}, filepath.Join(fsRoot, "team-a/echo/b1")},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			ctx := context.Background()
			for _, key := range []string{"team-a/echo/b1", "team-a/echo/b2"} {
				if _, err := Backup(ctx, BackupOptions{DataDir: f.source, Store: s.store, Key: key}); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				res := runMover(t, f.srv.Env(), append([]string{"delete", "--key", "team-a/echo/b1"}, s.flags...)...)
				if res.code != 0 {
					t.Fatalf("delete failed: %s\n%s", res.term, res.stderr)
				}
				if res.deletion != (moverprotocol.Deletion{Location: s.location}) {
					t.Errorf("termination log %s, want the location %s alone", res.term, s.location)
				}
				f.checkNoSecret(t, res)
			}
			if got := storedKeys(t, s.store, "team-a/"); !slices.Equal(got, []string{"team-a/echo/b2/data.tar.gz", "team-a/echo/b2/manifest.json"}) {
				t.Errorf("store holds %v, want the other backup alone", got)
			}
		})
	}
}

// TestCLIDeleteFaults: a deletion that fails says why and leaves the
// backup whole.
func TestCLIDeleteFaults(t *testing.T) {
	f := newFaultEnv(t)
	f.backupTo(t, "delete-faults/b1")
	for _, c := range []struct {
		name      string
		env       []string
		args      []string
		reason    string
		retryable bool
	}{
		{"wrong credentials", f.wrongEnv, s3Flags(f.srv, testBucket), "AccessDenied", false},
		{"unreachable endpoint", f.srv.Env(), []string{"--s3-endpoint", f.unreachable, "--s3-bucket", testBucket, "--s3-path-style"}, "Unavailable", true},
		{"missing bucket", f.srv.Env(), s3Flags(f.srv, "no-such-bucket"), "BucketNotFound", false},
		{"no key", f.srv.Env(), []string{"--key=", "--s3-endpoint", f.srv.Endpoint, "--s3-bucket", testBucket}, "InvalidArgument", false},
		{"bad key", f.srv.Env(), append([]string{"--key", "../delete-faults/b1"}, s3Flags(f.srv, testBucket)...), "InvalidArgument", false},
		{"a data directory", f.srv.Env(), append([]string{"--data-dir", f.source}, s3Flags(f.srv, testBucket)...), "InvalidArgument", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			if !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--key") }) {
				args = append([]string{"--key", "delete-faults/b1"}, args...)
			}
			res := runMover(t, c.env, append([]string{"delete"}, args...)...)
			expectFailure(t, res, c.reason, c.retryable)
			f.checkNoSecret(t, res)
			if got := storedKeys(t, f.store, "delete-faults/"); len(got) != 2 {
				t.Errorf("store holds %v after a failed deletion, want the whole backup", got)
			}
		})
	}
	out, err := exec.Command(managerBin, "delete", "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-key") || strings.Contains(string(out), "-data-dir") {
		t.Errorf("delete -h: %v\n%s", err, out)
	}
}

// TestCLIInspect inspects backups made by Backup with the manager binary,
// as the first Job of a restore does: the termination log carries the
// manifest's source and counts and the backed-up Echo, and the store is
// left as it was.
func TestCLIInspect(t *testing.T) {
	f := newFaultEnv(t)
	fsRoot := t.TempDir()
	fsStore, err := backupstore.NewFSStore(fsRoot)
	if err != nil {
		t.Fatal(err)
	}
	const key = "team-a/journal/b1"
	stores := []struct {
		name     string
		store    backupstore.Store
		flags    []string
		location string
	}{
		{"s3", f.store, s3Flags(f.srv, testBucket), "s3://backups/echo-backups/" + key},
		{"fs", fsStore, []string{"--fs-root", fsRoot}, filepath.Join(fsRoot, key)},
	}
	echo := configEcho(t, inspectConfig)
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			m := backupForInspect(t, s.store, f.source, key, inspectConfig)
			before := storedKeys(t, s.store, "team-a/")
			res := runMover(t, f.srv.Env(), append([]string{"inspect", "--key", key}, s.flags...)...)
			if res.code != 0 {
				t.Fatalf("inspect failed: %s\n%s", res.term, res.stderr)
			}
			got := res.inspection
			want := moverprotocol.Inspection{Location: s.location, Source: moverprotocol.Source(inspectSource), CreatedAt: "2026-01-02T03:04:05Z",
				Files: len(m.Files), DataFiles: m.DataFiles(), Size: m.DataSize()}
			if got.Location != want.Location || got.Source != want.Source || got.CreatedAt != want.CreatedAt ||
				got.Files != want.Files || got.DataFiles != want.DataFiles || got.Size != want.Size {
				t.Errorf("termination log %s; want %+v", res.term, want)
			}
			// sampleData: six files of data (the mover's own entries and
			// lost+found are not backed up), and config.json.
			if got.DataFiles != 6 || got.Files != 7 || got.Size <= 3<<20 {
				t.Errorf("files %d, dataFiles %d, size %d; want 7, 6 and the blob's size and more", got.Files, got.DataFiles, got.Size)
			}
			if !bytes.Equal(got.Echo, echo) || got.EchoGzip != "" {
				t.Errorf("echo %s, echoGzip %q; want the backed-up Echo as is: %s", got.Echo, got.EchoGzip, echo)
			}
			if after := storedKeys(t, s.store, "team-a/"); !slices.Equal(after, before) {
				t.Errorf("store holds %v after inspect, held %v", after, before)
			}
			f.checkNoSecret(t, res)
		})
	}
}

// configEcho returns the "echo" member of config, compacted.
func configEcho(t *testing.T, config string) []byte {
	t.Helper()
	var members map[string]json.RawMessage
	if err := json.Unmarshal([]byte(config), &members); err != nil {
		t.Fatal(err)
	}
	if members["echo"] == nil {
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, members["echo"]); err != nil {
		t.Fatal(err)
	}
	return compact.Bytes()
}

// smallData is a data directory of one journal.
func smallData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"journal/echo-0.jsonl": "{\"seq\":1}\n"})
	return dir
}

// TestCLIInspectConfigSizes: the backed-up Echo goes back as is, gzipped
// when too long for a termination message, and not at all (echoOmitted)
// when even that is too long.
func TestCLIInspectConfigSizes(t *testing.T) {
	needManager(t)
	source := smallData(t)
	random := make([]byte, 7680)
	_, _ = rand.NewChaCha8([32]byte{9}).Read(random)
	withAnnotation := func(note string) string {
		quoted, err := json.Marshal(note)
		if err != nil {
			t.Fatal(err)
		}
		return `{"echo": {"apiVersion": "echo.dev/v1alpha1", "kind": "Echo",
			"metadata": {"name": "journal", "namespace": "team-a", "annotations": {"echo.dev/note": ` + string(quoted) + `}},
			"spec": {"replicas": 1}},
		  "release": {"chart": "echo", "chartVersion": "0.1.0"}}`
	}
	cases := []struct {
		name    string
		config  string
		gzip    bool
		omitted bool
	}{
		{name: "small", config: withAnnotation("short")},
		{name: "no configuration", config: ""},
		{name: "no echo", config: `{"release": {"chart": "echo"}}`},
		{name: "not an object", config: `["echo"]`},
		{name: "20 KB of text", config: withAnnotation(strings.Repeat("the quick brown fox jumps over the lazy dog; ", 460)), gzip: true},
		{name: "10 KB of random base64", config: withAnnotation(base64.StdEncoding.EncodeToString(random)), omitted: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			store, err := backupstore.NewFSStore(root)
			if err != nil {
				t.Fatal(err)
			}
			backupForInspect(t, store, source, "k", c.config)
			res := runMover(t, nil, "inspect", "--key", "k", "--fs-root", root)
			if res.code != 0 {
				t.Fatalf("inspect failed: %s\n%s", res.term, res.stderr)
			}
			if res.inspection.EchoOmitted != c.omitted {
				t.Fatalf("echoOmitted = %v, want %v", res.inspection.EchoOmitted, c.omitted)
			}
			if n := len(strings.TrimSuffix(res.term, "\n")); n > 3500 {
				t.Errorf("termination message is %d bytes, more than 3500", n)
			}
			var want []byte
			if strings.HasPrefix(strings.TrimSpace(c.config), "{") && !c.omitted {
				want = configEcho(t, c.config)
			}
			got := []byte(res.inspection.Echo)
			if c.gzip {
				if len(got) != 0 {
					t.Errorf("echo and echoGzip both present")
				}
				got = gunzipBase64(t, res.inspection.EchoGzip)
			} else if res.inspection.EchoGzip != "" {
				t.Errorf("echoGzip present for a %d-byte Echo", len(want))
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the Echo handed back is\n%s\nwant\n%s", got, want)
			}
		})
	}
}

func gunzipBase64(t *testing.T, s string) []byte {
	t.Helper()
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("echoGzip: %v", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatalf("echoGzip: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("echoGzip: %v", err)
	}
	return b
}

// TestCLIInspectFaults: a backup inspect cannot vouch for fails
// permanently, with the reason restore gives the same backup where
// restore reads it the same way.
func TestCLIInspectFaults(t *testing.T) {
	needManager(t)
	source := smallData(t)
	cases := []struct {
		name   string
		tamper func(t *testing.T, s backupstore.Store, key string) // nil: no backup
		args   []string                                            // more flags
		reason string
		// asRestore: restore fails the same way.
		asRestore bool
	}{
		{name: "missing backup", reason: "NotFound", asRestore: true},
		{name: "unknown format version", tamper: unknownFormat, reason: "UnknownFormat", asRestore: true},
		{name: "archive deleted", tamper: deleteArchive, reason: "CorruptArchive"},
		{name: "archive truncated", tamper: truncateArchive, reason: "ChecksumMismatch", asRestore: true},
		{name: "a data directory", tamper: func(*testing.T, backupstore.Store, string) {}, args: []string{"--data-dir", source}, reason: "InvalidArgument"},
		{name: "no key", tamper: func(*testing.T, backupstore.Store, string) {}, args: []string{"--key="}, reason: "InvalidArgument"},
		{name: "both stores", tamper: func(*testing.T, backupstore.Store, string) {}, args: []string{"--s3-endpoint", "http://127.0.0.1:1", "--s3-bucket", "b"}, reason: "InvalidArgument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			store, err := backupstore.NewFSStore(root)
			if err != nil {
				t.Fatal(err)
			}
			const key = "team-a/journal/b1"
			if c.tamper != nil {
				backupForInspect(t, store, source, key, inspectConfig)
				c.tamper(t, store, key)
			}
			before := storedKeys(t, store, "")
			flags := append([]string{"--key", key, "--fs-root", root}, c.args...)
			res := runMover(t, nil, append([]string{"inspect"}, flags...)...)
			expectFailure(t, res, c.reason, false)
			if after := storedKeys(t, store, ""); !slices.Equal(after, before) {
				t.Errorf("store holds %v after inspect, held %v", after, before)
			}
			if c.asRestore {
				restore := runMover(t, nil, append([]string{"restore", "--data-dir", filepath.Join(t.TempDir(), "data")}, flags...)...)
				expectFailure(t, restore, c.reason, false)
			}
		})
	}
	out, err := exec.Command(managerBin, "inspect", "-h").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-key") || !strings.Contains(string(out), "-fs-root") || strings.Contains(string(out), "-data-dir") {
		t.Errorf("inspect -h: %v\n%s", err, out)
	}
}
