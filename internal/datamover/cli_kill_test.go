package datamover

// The data mover stopped mid-upload, as a drained node (SIGTERM) or an OOM
// kill (SIGKILL) stops it, against a real S3 service: every run ends in one
// consistent outcome, nothing half-visible, no multipart upload left open.

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// largeUploadBytes makes the archive span several multipart parts, so the
// upload is under way long enough to be stopped.
const largeUploadBytes = 3 * backupstore.DefaultS3PartSize

// largeDataDir is a data directory whose archive takes several parts.
func largeDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "blob"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, randomReader(7, largeUploadBytes)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// incompleteUploads lists the unfinished multipart uploads of the backup
// under key, by upload ID.
func (f *faultEnv) incompleteUploads(t *testing.T, key string) []string {
	t.Helper()
	prefix := "echo-backups/" + key + "/"
	// MinIO matches a listing's prefix against whole object names only,
	// and lists with an empty prefix only the uploads it has seen since it
	// started: ask for each of the backup's objects by name, and for all
	// the uploads it knows of.
	listings := []string{""}
	for _, c := range []backupstore.Compression{backupstore.CompressionGzip, backupstore.CompressionNone} {
		listings = append(listings, prefix+c.ArchiveName())
	}
	listings = append(listings, prefix+backupstore.ManifestName)
	var ids []string
	for _, name := range listings {
		for u := range f.client.ListIncompleteUploads(context.Background(), testBucket, name, true) {
			if u.Err != nil {
				t.Fatal(u.Err)
			}
			if strings.HasPrefix(u.Key, prefix) && !slices.Contains(ids, u.UploadID) {
				ids = append(ids, u.UploadID)
			}
		}
	}
	return ids
}

// gate says which way a gatedProxy counts bytes and stalls.
type gate int

const (
	gateUpload   gate = iota // what clients send to the store
	gateDownload             // what the store sends to clients
)

// gatedProxy forwards TCP connections to the store and, once more than
// limit bytes have gone the gated way in all, stops forwarding them on
// the connection that crossed it: a transfer through it stalls mid-way,
// for as long as the test needs, so the mover can be stopped at a known
// point. A connection the store ends (or that ends with the store) ends
// for the client too, as it would without the proxy.
type gatedProxy struct {
	addr    string
	gate    gate
	limit   int64
	passed  atomic.Int64
	stalled chan struct{} // closed once the limit is reached
	once    sync.Once
}

func startGatedProxy(t *testing.T, target string, g gate, limit int64) *gatedProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	p := &gatedProxy{addr: ln.Addr().String(), gate: g, limit: limit, stalled: make(chan struct{})}
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(t, client, target)
		}
	}()
	return p
}

func (p *gatedProxy) forward(t *testing.T, client net.Conn, target string) {
	server, err := net.Dial("tcp", target)
	if err != nil {
		// Nothing listens there (the store is down): the client's
		// connection ends at once.
		_ = client.Close()
		return
	}
	t.Cleanup(func() { _ = client.Close(); _ = server.Close() })
	go func() {
		if !p.pump(server, client, p.gate == gateUpload) {
			_ = server.Close() // the client went away
		}
	}()
	p.pump(client, server, p.gate == gateDownload)
	// The store closed the connection, or went away.
	_ = client.Close()
}

// pump copies src to dst until src ends, and reports whether it stalled.
// A gated pump stalls on crossing the limit: an upload's stops reading
// from the client, whose connection stays open; a download's stops
// forwarding but goes on reading (and dropping) what the store sends, so
// that the store ending the connection is still seen.
func (p *gatedProxy) pump(dst, src net.Conn, gated bool) (stalled bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && gated && !stalled && p.passed.Add(int64(n)) > p.limit && p.stall() {
			stalled = true
			if p.gate == gateUpload {
				return true
			}
		}
		if n > 0 && !stalled {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return stalled
			}
		}
		if err != nil {
			return stalled
		}
	}
}

// stall reports whether the caller's connection is the one to stall:
// only the first to cross the limit is; the store stays reachable on any
// other (for the mover's abort, say).
func (p *gatedProxy) stall() bool {
	first := false
	p.once.Do(func() { first = true; close(p.stalled) })
	return first
}

// waitStalled waits until a transfer through the proxy stalls, or fails
// the test with the mover's output.
func (p *gatedProxy) waitStalled(t *testing.T, mover *moverProcess) {
	t.Helper()
	select {
	case <-p.stalled:
	case <-time.After(moverTimeout):
		t.Fatalf("the transfer never reached the point where it stalls\n%s", mover.stderr)
	}
}

// hostPort is the host:port of an endpoint URL.
func hostPort(endpoint string) string {
	return strings.TrimPrefix(strings.TrimPrefix(endpoint, "http://"), "https://")
}

// proxiedFlags are the storage flags of a Job reaching the store through
// proxy.
func (f *faultEnv) proxiedFlags(proxy *gatedProxy) []string {
	flags := s3Flags(f.srv, testBucket)
	flags[1] = strings.Replace(f.srv.Endpoint, hostPort(f.srv.Endpoint), proxy.addr, 1) // after --s3-endpoint
	return flags
}

// stallUpload starts a backup of dir under key through a proxy that
// stalls it in the middle of its archive's second part, and returns once
// it has stalled with its multipart upload open in the store.
func (f *faultEnv) stallUpload(t *testing.T, dir, key, backupID string) *moverProcess {
	t.Helper()
	proxy := startGatedProxy(t, hostPort(f.srv.Endpoint), gateUpload, backupstore.DefaultS3PartSize*3/2)
	p := startMover(t, f.srv.Env(), append([]string{"backup", "--data-dir", dir, "--key", key,
		"--" + moverprotocol.FlagBackupID, backupID}, f.proxiedFlags(proxy)...)...)
	proxy.waitStalled(t, p)
	if left := f.incompleteUploads(t, key); len(left) != 1 {
		t.Fatalf("uploads open while the backup is stalled: %v, want its archive's", left)
	}
	return p
}

// stopMidUpload is stallUpload, then sig to the mover.
func (f *faultEnv) stopMidUpload(t *testing.T, dir, key, backupID string, sig syscall.Signal) *moverProcess {
	t.Helper()
	p := f.stallUpload(t, dir, key, backupID)
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCLIStoppedMidUpload: a mover stopped by SIGTERM reports a retryable
// failure and aborts its upload; one killed outright leaves its parts to
// the next attempt, which removes them and completes the backup.
func TestCLIStoppedMidUpload(t *testing.T) {
	f := newFaultEnv(t)
	dir := largeDataDir(t)

	t.Run("SIGTERM", func(t *testing.T) {
		res := f.stopMidUpload(t, dir, "stopped/term", "uid-term", syscall.SIGTERM).result(t, "backup")
		expectFailure(t, res, string(moverprotocol.ReasonCanceled), true)
		if left := f.incompleteUploads(t, "stopped/term"); len(left) > 0 {
			t.Errorf("multipart uploads left open: %v", left)
		}
		if got := storedKeys(t, f.store, "stopped/term"); len(got) != 0 {
			t.Errorf("a stopped backup left %v visible", got)
		}
	})

	t.Run("SIGKILL then retry", func(t *testing.T) {
		p := f.stopMidUpload(t, dir, "stopped/kill", "uid-kill", syscall.SIGKILL)
		if err := p.cmd.Wait(); err == nil {
			t.Fatal("the killed mover exited cleanly")
		}
		if got := storedKeys(t, f.store, "stopped/kill"); len(got) != 0 {
			t.Errorf("a killed backup left %v visible", got)
		}
		retry := runMover(t, f.srv.Env(), append([]string{"backup", "--data-dir", dir, "--key", "stopped/kill",
			"--" + moverprotocol.FlagBackupID, "uid-kill"}, s3Flags(f.srv, testBucket)...)...)
		if retry.code != 0 {
			t.Fatalf("the retry failed: %s\n%s", retry.term, retry.stderr)
		}
		if left := f.incompleteUploads(t, "stopped/kill"); len(left) > 0 {
			t.Errorf("multipart uploads left open after the retry: %v", left)
		}
		if _, err := Restore(context.Background(), RestoreOptions{DataDir: t.TempDir(), Store: f.store, Key: "stopped/kill"}); err != nil {
			t.Errorf("the retried backup does not restore: %v", err)
		}
	})
}

// TestCLIRetryAfterManifest: a Job retried after its first attempt stored
// the whole artifact (killed before it could report it) reports that
// artifact, unchanged; another backup under the key is refused.
func TestCLIRetryAfterManifest(t *testing.T) {
	f := newFaultEnv(t)
	backup := func(id string) moverResult {
		return runMover(t, f.srv.Env(), append([]string{"backup", "--data-dir", f.source, "--key", "retried/b1",
			"--" + moverprotocol.FlagBackupID, id}, s3Flags(f.srv, testBucket)...)...)
	}
	first := backup("uid-1")
	if first.code != 0 {
		t.Fatalf("backup failed: %s\n%s", first.term, first.stderr)
	}
	stat := func() minio.ObjectInfo {
		info, err := f.client.StatObject(context.Background(), testBucket, "echo-backups/"+backupstore.ManifestKey("retried/b1"), minio.StatObjectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	before := stat()
	retry := backup("uid-1")
	if retry.code != 0 || retry.success != first.success {
		t.Fatalf("retry = %d %s, want the first attempt's result %+v\n%s", retry.code, retry.term, first.success, retry.stderr)
	}
	if after := stat(); after.ETag != before.ETag || !after.LastModified.Equal(before.LastModified) {
		t.Error("the retry rewrote the manifest")
	}
	expectFailure(t, backup("uid-2"), string(moverprotocol.ReasonAlreadyExists), false)
}
