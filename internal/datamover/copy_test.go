package datamover

// The copy subcommand between two real S3 servers, each with credentials
// of its own: a verified copy that lists and restores as a backup, a
// refused archive leaving nothing behind, and a destination lost mid-copy,
// then back.

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
	"github.com/echo-operator/echo-operator/test/harness/storetest"
)

// copyEnv is a source and a destination S3 server.
type copyEnv struct {
	from, to *s3server.Server
}

func newCopyEnv(t *testing.T) *copyEnv {
	t.Helper()
	needManager(t)
	return &copyEnv{from: s3server.Start(t, testBucket), to: s3server.Start(t, testBucket)}
}

// env gives the mover the source's credentials under their names and the
// destination's under moverprotocol.ToEnv's.
func (c *copyEnv) env() []string {
	return append(c.from.Env(),
		moverprotocol.ToEnv(moverprotocol.EnvAccessKeyID)+"="+c.to.AccessKey,
		moverprotocol.ToEnv(moverprotocol.EnvSecretAccessKey)+"="+c.to.SecretKey)
}

// toFlags are the destination's storage flags for an endpoint of it.
func toFlags(endpoint string) []string {
	return []string{"--to-s3-endpoint", endpoint, "--to-s3-region", s3server.Region, "--to-s3-bucket", testBucket,
		"--to-s3-prefix", "offsite", "--to-s3-path-style"}
}

// copyArgs are the arguments copying the backup under key, verified
// against checksum, to the destination's endpoint.
func (c *copyEnv) copyArgs(key, checksum, endpoint string) []string {
	args := append([]string{"copy", "--key", key, "--checksum", checksum}, s3Flags(c.from, testBucket)...)
	return append(args, toFlags(endpoint)...)
}

func (c *copyEnv) fromStore(t *testing.T) backupstore.Store {
	return newTestS3Store(t, c.from, backupstore.S3Config{Prefix: "echo-backups"})
}

func (c *copyEnv) toStore(t *testing.T) backupstore.Store {
	return newTestS3Store(t, c.to, backupstore.S3Config{Prefix: "offsite"})
}

// backup stores a backup of dir under key at the source and returns its
// recorded checksum.
func (c *copyEnv) backup(t *testing.T, dir, key string) string {
	t.Helper()
	m, err := Backup(context.Background(), BackupOptions{DataDir: dir, Store: c.fromStore(t), Key: key, BackupID: "uid-" + key})
	if err != nil {
		t.Fatal(err)
	}
	return checksumPrefix + m.Archive.SHA256
}

// expectNothingAt fails the test if anything is stored under key at s.
func expectNothingAt(t *testing.T, s backupstore.Store, key string) {
	t.Helper()
	objs, err := s.List(context.Background(), key+"/")
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) > 0 {
		t.Fatalf("objects left under %s: %v", s.Location(key), objs)
	}
}

// TestCLICopy: the copy is the backup, verified, under the same key at the
// destination: it lists as a backup there and restores as the original.
func TestCLICopy(t *testing.T) {
	c := newCopyEnv(t)
	dir, want := sampleData(t)
	checksum := c.backup(t, dir, "ns/echo/b1")

	res := startMover(t, c.env(), c.copyArgs("ns/echo/b1", checksum, c.to.Endpoint)...).result(t, "copy")
	if res.code != 0 {
		t.Fatalf("copy failed: %s\n%s", res.term, res.stderr)
	}
	to := c.toStore(t)
	if res.success.Checksum != checksum || res.success.Location != to.Location("ns/echo/b1") || res.success.Size == 0 {
		t.Fatalf("copy reported %+v, want checksum %s at %s", res.success, checksum, to.Location("ns/echo/b1"))
	}
	listing, err := backupstore.ListBackups(context.Background(), to, backupstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(listing.Backups) != 1 || listing.Backups[0].Key != "ns/echo/b1" {
		t.Fatalf("the destination lists %+v, want the copy ns/echo/b1", listing.Backups)
	}
	target := t.TempDir()
	if _, err := Restore(context.Background(), RestoreOptions{DataDir: target, Store: to, Key: "ns/echo/b1"}); err != nil {
		t.Fatalf("restoring the copy: %v", err)
	}
	if diff := diffTrees(want, readTree(t, target)); diff != "" {
		t.Fatalf("the copy restores other data:\n%s", diff)
	}

	t.Run("again: the earlier copy is reported", func(t *testing.T) {
		res := startMover(t, c.env(), c.copyArgs("ns/echo/b1", checksum, c.to.Endpoint)...).result(t, "copy")
		if res.code != 0 || res.success.Checksum != checksum || !strings.Contains(res.stderr, "copy already stored by an earlier attempt") {
			t.Fatalf("second copy: code %d, %s\n%s", res.code, res.term, res.stderr)
		}
	})
	t.Run("another backup at the destination is not overwritten", func(t *testing.T) {
		other := c.backup(t, dir, "ns/echo/b2")
		storetest.PutBytes(t, to, backupstore.ManifestKey("ns/echo/b2"), []byte(`{"formatVersion":1}`))
		res := startMover(t, c.env(), c.copyArgs("ns/echo/b2", other, c.to.Endpoint)...).result(t, "copy")
		expectFailure(t, res, string(moverprotocol.ReasonAlreadyExists), false)
	})
}

// TestCLICopyRefusesAnotherArchive: an archive that is not the one the
// backup recorded is refused as a permanent failure, and nothing of it is
// left at the destination.
func TestCLICopyRefusesAnotherArchive(t *testing.T) {
	c := newCopyEnv(t)
	dir, _ := sampleData(t)
	checksum := c.backup(t, dir, "ns/echo/b1")
	to := c.toStore(t)

	t.Run("the backup recorded another checksum", func(t *testing.T) {
		wrong := checksumPrefix + strings.Repeat("0", 64)
		res := startMover(t, c.env(), c.copyArgs("ns/echo/b1", wrong, c.to.Endpoint)...).result(t, "copy")
		expectFailure(t, res, string(moverprotocol.ReasonChecksumMismatch), false)
		expectNothingAt(t, to, "ns/echo/b1")
	})
	t.Run("the source's archive was altered", func(t *testing.T) {
		from := c.fromStore(t)
		archiveKey := backupstore.ArchiveKey("ns/echo/b1", backupstore.CompressionGzip)
		body := storetest.GetBytes(t, from, archiveKey)
		altered := bytes.Clone(body)
		altered[len(altered)/2] ^= 0xff
		storetest.PutBytes(t, from, archiveKey, altered)
		res := startMover(t, c.env(), c.copyArgs("ns/echo/b1", checksum, c.to.Endpoint)...).result(t, "copy")
		expectFailure(t, res, string(moverprotocol.ReasonChecksumMismatch), false)
		if !strings.Contains(res.failure.Error, "hashes to") {
			t.Errorf("the error does not say the archive hashes otherwise: %s", res.failure.Error)
		}
		expectNothingAt(t, to, "ns/echo/b1")
	})
}

// TestCLICopyDestinationLost: the destination's server killed mid-copy
// fails the copy as retryable, naming the destination, with no backup
// listed there; once it is back, the retry completes the copy.
func TestCLICopyDestinationLost(t *testing.T) {
	c := newCopyEnv(t)
	dir := largeDataDir(t)
	checksum := c.backup(t, dir, "ns/echo/large")

	proxy := startGatedProxy(t, hostPort(c.to.Endpoint), gateUpload, backupstore.DefaultS3PartSize*3/2)
	proxied := strings.Replace(c.to.Endpoint, hostPort(c.to.Endpoint), proxy.addr, 1)
	p := startMover(t, c.env(), c.copyArgs("ns/echo/large", checksum, proxied)...)
	proxy.waitStalled(t, p)
	c.to.Stop(t)
	res := p.result(t, "copy")
	expectFailure(t, res, string(moverprotocol.ReasonUnavailable), true)
	if !strings.Contains(res.failure.Error, "copy to s3://"+testBucket+"/offsite/ns/echo/large") {
		t.Errorf("the error does not name the destination: %s", res.failure.Error)
	}

	c.to.Restart(t)
	to := c.toStore(t)
	if _, err := to.Stat(context.Background(), backupstore.ManifestKey("ns/echo/large")); !errors.Is(err, backupstore.ErrNotFound) {
		t.Fatalf("the failed copy left a manifest (err %v): it would be listed as a backup", err)
	}
	res = startMover(t, c.env(), c.copyArgs("ns/echo/large", checksum, c.to.Endpoint)...).result(t, "copy")
	if res.code != 0 || res.success.Checksum != checksum {
		t.Fatalf("the retry failed: %s\n%s", res.term, res.stderr)
	}
	if _, err := Inspect(context.Background(), InspectOptions{Store: to, Key: "ns/echo/large"}); err != nil {
		t.Fatalf("the retried copy is not whole: %v", err)
	}
}

// TestCopyBetweenStores: Copy in-process, from a filesystem store to
// another and to S3: the copy lists as the backup; an archive whose bytes
// were altered is refused before its upload completes.
func TestCopyBetweenStores(t *testing.T) {
	inBothStores(t, func(t *testing.T, to backupstore.Store) {
		from := newFSStore(t)
		dir, _ := sampleData(t)
		m, err := Backup(context.Background(), BackupOptions{DataDir: dir, Store: from, Key: "ns/echo/b1"})
		if err != nil {
			t.Fatal(err)
		}
		got, err := Copy(context.Background(), CopyOptions{From: from, To: to, Key: "ns/echo/b1", Checksum: checksumPrefix + m.Archive.SHA256})
		if err != nil {
			t.Fatal(err)
		}
		if got.Archive != m.Archive {
			t.Fatalf("copied archive %+v, want %+v", got.Archive, m.Archive)
		}
		if _, err := Inspect(context.Background(), InspectOptions{Store: to, Key: "ns/echo/b1"}); err != nil {
			t.Fatalf("the copy is not a whole backup: %v", err)
		}

		if _, err := Backup(context.Background(), BackupOptions{DataDir: dir, Store: from, Key: "ns/echo/b2"}); err != nil {
			t.Fatal(err)
		}
		archiveKey := backupstore.ArchiveKey("ns/echo/b2", backupstore.CompressionGzip)
		altered := storetest.GetBytes(t, from, archiveKey)
		altered[len(altered)/3] ^= 0x01
		storetest.PutBytes(t, from, archiveKey, altered)
		m2, err := Inspect(context.Background(), InspectOptions{Store: from, Key: "ns/echo/b2"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Copy(context.Background(), CopyOptions{From: from, To: to, Key: "ns/echo/b2", Checksum: checksumPrefix + m2.Archive.SHA256})
		if !errors.Is(err, backupstore.ErrChecksumMismatch) {
			t.Fatalf("copying an altered archive = %v, want ErrChecksumMismatch", err)
		}
		expectNothingAt(t, to, "ns/echo/b2")
	})
}
