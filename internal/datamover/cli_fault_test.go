package datamover

// The data mover stopped mid-download (SIGTERM, SIGKILL), killed between
// the renames that put restored data in place, and left without its S3
// service mid-transfer: every run ends in one consistent outcome, and the
// run after it (the Job's retry) completes with nothing left over.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// restoreSource is a data directory a restore copies exactly: journals,
// nested directories, an empty one, a private file and blobSize bytes of
// incompressible data (so the archive is about that long), and nothing a
// backup skips (symlinks, the mover's directories) or trims (a torn
// journal line). Its top-level journal directory shares its name with
// one of existingData's.
func restoreSource(t *testing.T, blobSize int64) string {
	t.Helper()
	dir := t.TempDir()
	blob, err := io.ReadAll(randomReader(11, blobSize))
	if err != nil {
		t.Fatal(err)
	}
	writeTree(t, dir, map[string]string{
		"journal/echo-0.jsonl": "{\"seq\":1}\n{\"seq\":2}\n",
		"journal/echo-1.jsonl": "{\"seq\":1}\n",
		"attachments/blob.bin": string(blob),
		"empty/":               "",
		"notes.txt":            "restored notes",
		"private.txt":          "restored secret",
	})
	for name, mode := range map[string]os.FileMode{"private.txt": 0o600, "empty": 0o700} {
		if err := os.Chmod(filepath.Join(dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// splitTree returns the entries of dir that are data, and the mover's own
// top-level directories (staging, pre-restore) with what they hold.
func splitTree(t *testing.T, dir string) (data map[string]treeEntry, mover map[string]map[string]treeEntry) {
	t.Helper()
	data, mover = map[string]treeEntry{}, map[string]map[string]treeEntry{}
	for name, e := range readTree(t, dir) {
		top, rest, _ := strings.Cut(name, "/")
		if !isMoverEntry(top) {
			data[name] = e
			continue
		}
		if mover[top] == nil {
			mover[top] = map[string]treeEntry{}
		}
		if rest != "" {
			mover[top][rest] = e
		}
	}
	return data, mover
}

// withPrefix returns the names in dirs that start with prefix.
func withPrefix(dirs map[string]map[string]treeEntry, prefix string) []string {
	var names []string
	for name := range dirs {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// checkRestored fails unless target holds exactly want as its data and
// nothing of the mover's but, when old is not nil, one pre-restore
// directory holding exactly old: no staging directory, no second copy.
func checkRestored(t *testing.T, target string, want, old map[string]treeEntry) {
	t.Helper()
	data, mover := splitTree(t, target)
	if d := diffTrees(want, data); d != "" {
		t.Errorf("the restored data differs from the backup's source:\n%s", d)
	}
	expectMoverDirsSettled(t, mover, old)
}

// policyFor is the policy of a restore: Replace over old data, the
// default Fail on a new volume.
func policyFor(old map[string]string) ExistingDataPolicy {
	if old != nil {
		return ExistingDataReplace
	}
	return ExistingDataFail
}

// restoreArgs are a restore Job's arguments but the storage flags.
func restoreArgs(target, key string, old map[string]string) []string {
	return []string{"restore", "--data-dir", target, "--key", key, "--" + moverprotocol.FlagExistingData, string(policyFor(old))}
}

// killedBySIGKILL waits for a mover and fails the test unless SIGKILL
// ended it.
func killedBySIGKILL(t *testing.T, cmd *exec.Cmd, stderr fmt.Stringer) {
	t.Helper()
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the mover was not killed: %v\n%s", err, stderr)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the mover ended with %v, not killed by SIGKILL\n%s", err, stderr)
	}
}

// TestCLIStoppedMidDownload: a restore stopped while its archive is
// arriving, by SIGTERM (a drained node) or SIGKILL (an OOM kill), leaves
// the data directory's data as it was, byte for byte; a SIGTERM says so
// (Canceled, retryable). The next attempt restores the backup whole and
// leaves no staging directory behind.
func TestCLIStoppedMidDownload(t *testing.T) {
	f := newFaultEnv(t)
	src := restoreSource(t, 4<<20)
	want := readTree(t, src)
	const key = "download/b1"
	m, err := Backup(context.Background(), BackupOptions{DataDir: src, Store: f.store, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		old  map[string]string // the data before the restore; nil: a new volume
	}{
		{"SIGTERM", syscall.SIGTERM, existingData},
		{"SIGKILL", syscall.SIGKILL, existingData},
		{"SIGKILL on a new volume", syscall.SIGKILL, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "data")
			var old map[string]treeEntry
			if c.old != nil {
				writeTree(t, target, c.old)
				old = readTree(t, target)
			}
			args := restoreArgs(target, key, c.old)
			// Half the archive gets through, then nothing more.
			proxy := startGatedProxy(t, hostPort(f.srv.Endpoint), gateDownload, m.Archive.Size/2)
			p := startMover(t, f.srv.Env(), append(args, f.proxiedFlags(proxy)...)...)
			proxy.waitStalled(t, p)
			// The archive streams into a staging directory in the target.
			if _, mover := splitTree(t, target); len(withPrefix(mover, stagingPrefix)) != 1 {
				t.Fatalf("no staging directory while the download is under way: %v", mover)
			}
			if err := p.cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			if c.sig == syscall.SIGTERM {
				expectFailure(t, p.result(t, "restore"), string(moverprotocol.ReasonCanceled), true)
				// Stopped in good order, it removed its staging directory too.
				assertUntouched(t, target, old)
			} else {
				killedBySIGKILL(t, p.cmd, p.stderr)
				data, mover := splitTree(t, target)
				if d := diffTrees(old, data); d != "" {
					t.Errorf("the killed restore changed the data:\n%s", d)
				}
				if len(mover) != 1 || len(withPrefix(mover, stagingPrefix)) != 1 {
					t.Errorf("the killed restore left %v, want its staging directory alone", mover)
				}
			}

			retry := runMover(t, f.srv.Env(), append(args, s3Flags(f.srv, testBucket)...)...)
			if retry.code != 0 {
				t.Fatalf("the retry failed: %s\n%s", retry.term, retry.stderr)
			}
			if retry.success.Checksum != "sha256:"+m.Archive.SHA256 {
				t.Errorf("the retry restored %s, want the backup's sha256:%s", retry.success.Checksum, m.Archive.SHA256)
			}
			checkRestored(t, target, want, old)
		})
	}
}

// stopSwapAfter leaves target as a restore of key killed right after the
// k-th step of its swap leaves it, and returns how many steps the swap
// has. It runs the restore's own code up to that point: the checks and
// the verified download into a staging directory, as Restore does, the
// swap's plan, then its first k steps. That is the state a kill leaves:
// SIGKILL ends the mover between two system calls, the kernel undoes none
// of them, and every process sees the same page cache, so the next run
// finds exactly what those calls did, whether it reached the disk or not.
func stopSwapAfter(t *testing.T, store backupstore.Store, key, target string, policy ExistingDataPolicy, k int) int {
	t.Helper()
	r, stagedData := stageRestore(t, store, key, target, policy, "")
	plan, err := r.planSwap(stagedData)
	if err != nil {
		t.Fatal(err)
	}
	return swapUpTo(t, r, stagedData, plan, k)
}

// swapUpTo records the plan of a swap and performs its first k steps, as
// a mover killed after step k did; it returns the number of steps.
func swapUpTo(t *testing.T, r *restore, stagedData string, plan swapPlan, k int) int {
	t.Helper()
	if err := writeSwapPlan(filepath.Dir(stagedData), plan); err != nil {
		t.Fatal(err)
	}
	steps := r.swapSteps(stagedData, plan)
	for i, step := range steps[:min(k, len(steps))] {
		if err := step(); err != nil {
			t.Fatalf("swap step %d: %v", i+1, err)
		}
	}
	return len(steps)
}

// TestCLIRestoreKilledBetweenRenames: a restore puts its verified data in
// place one rename at a time, old entries into a pre-restore directory
// first, then the restored ones out of staging, so a mover killed midway
// leaves a mix of both. Whichever step it was killed after, the next run
// puts the old data back and restores the backup whole: the data never
// stays a mix, the old data is kept once, nothing else is left over.
func TestCLIRestoreKilledBetweenRenames(t *testing.T) {
	needManager(t)
	src := restoreSource(t, 64<<10)
	want := readTree(t, src)
	const key = "swap/b1"
	store, root := swapBackup(t, src, key)
	for _, c := range []struct {
		name string
		old  map[string]string // nil: a new volume
	}{
		{"Replace over old data", existingData},
		{"Fail on a new volume", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := func(target string) []string { return append(restoreArgs(target, key, c.old), "--fs-root", root) }
			mixed := false
			// From killed before the first step to killed after the last.
			for k, steps := 0, 0; k == 0 || k <= steps; k++ {
				t.Run(fmt.Sprintf("killed after step %d", k), func(t *testing.T) {
					target := filepath.Join(t.TempDir(), "data")
					var old map[string]treeEntry
					if c.old != nil {
						writeTree(t, target, c.old)
						old = readTree(t, target)
					}
					steps = stopSwapAfter(t, store, key, target, policyFor(c.old), k)
					if data, _ := splitTree(t, target); diffTrees(want, data) != "" && diffTrees(old, data) != "" {
						mixed = true
					}
					res := runMover(t, nil, args(target)...)
					if res.code != 0 {
						t.Fatalf("the next run failed: %s\n%s", res.term, res.stderr)
					}
					if !strings.Contains(res.stderr, "undoing the swap of an earlier restore") {
						t.Errorf("the next run did not say it undid the swap:\n%s", res.stderr)
					}
					checkRestored(t, target, want, old)
				})
			}
			if !mixed {
				t.Error("no step left old and restored data mixed: the steps are not the swap's")
			}
		})
	}
}

// killMoverAt runs "manager <args>" under strace, which kills it with
// SIGKILL as it enters its first rename of path (and before the rename
// happens): a real kill at that exact point of the swap. It skips the
// test where strace is missing or may not trace.
func killMoverAt(t *testing.T, path string, args ...string) {
	t.Helper()
	needManager(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed: no real kill between two renames")
	}
	if out, err := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		t.Skipf("strace may not trace here: %v: %s", err, out)
	}
	// -f: any of the mover's threads may rename. Not --seccomp-bpf: with
	// it the path-filtered injection does not fire.
	cmd := exec.Command(strace, append([]string{"-f", "-qq", "-o", "/dev/null",
		"-e", "trace=renameat2", "-e", "inject=renameat2:signal=SIGKILL", "-P", path, "--",
		managerBin}, append(args, "--termination-log", filepath.Join(t.TempDir(), "termination-log"))...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killedBySIGKILL(t, cmd, &stderr)
}

// TestCLIRestoreReallyKilledBetweenRenames kills the real mover, not a
// reproduction of it, between two renames of its swap: while moving the
// old data aside, and once part of the restored data is in place. The
// next run recovers as from the reproduced states.
func TestCLIRestoreReallyKilledBetweenRenames(t *testing.T) {
	needManager(t)
	src := restoreSource(t, 64<<10)
	want := readTree(t, src)
	const key = "swap/b1"
	_, root := swapBackup(t, src, key)
	for _, c := range []struct {
		name   string
		old    map[string]string // nil: a new volume
		killAt string            // the entry whose first rename is not made
		// inPlace are the top-level entries in the data directory after
		// the kill, the restored ones when restored is set, else the old.
		inPlace  []string
		restored bool
	}{
		{"moving old data aside", existingData, "keep.txt", []string{"keep.txt"}, false},
		{"moving restored data in", existingData, "notes.txt", []string{"attachments", "empty", "journal"}, true},
		{"moving restored data into a new volume", nil, "journal", []string{"attachments", "empty"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "data")
			var old map[string]treeEntry
			if c.old != nil {
				writeTree(t, target, c.old)
				old = readTree(t, target)
			}
			args := append(restoreArgs(target, key, c.old), "--fs-root", root)
			killMoverAt(t, filepath.Join(target, c.killAt), args...)

			data, _ := splitTree(t, target)
			expected := old
			if c.restored {
				expected = want
			}
			var tops []string
			for name, e := range data {
				if top, _, _ := strings.Cut(name, "/"); !slices.Contains(tops, top) {
					tops = append(tops, top)
				}
				// Restored directories get their modes once the swap is
				// done; until then they have the staging mode.
				if w := expected[name]; w.Dir != e.Dir || w.Data != e.Data || !e.Dir && w.Mode != e.Mode {
					t.Errorf("%s in place after the kill is not the one it should be (restored: %v)", name, c.restored)
				}
			}
			slices.Sort(tops)
			if !slices.Equal(tops, c.inPlace) {
				t.Fatalf("after the kill the data directory holds %v, want %v: the kill did not fall between the renames", tops, c.inPlace)
			}

			res := runMover(t, nil, args...)
			if res.code != 0 {
				t.Fatalf("the next run failed: %s\n%s", res.term, res.stderr)
			}
			if !strings.Contains(res.stderr, "undoing the swap of an earlier restore") {
				t.Errorf("the next run did not say it undid the swap:\n%s", res.stderr)
			}
			checkRestored(t, target, want, old)
		})
	}
}

// TestCLIS3ServerStoppedMidTransfer: the S3 service goes away while a
// backup is uploading and a restore downloading. Each mover fails as
// unavailable, which a retry can cure, and leaves nothing half-visible:
// no artifact under the backup's key, the restore's data as it was. Once
// the service is back, the Jobs' next attempts complete: the backup
// verifies against its manifest with no multipart upload left open, and
// the restore is whole.
func TestCLIS3ServerStoppedMidTransfer(t *testing.T) {
	f := newFaultEnv(t)
	const backupKey, backupID, restoreKey = "outage/backup", "uid-outage", "outage/restore"
	src := restoreSource(t, 4<<20)
	m, err := Backup(context.Background(), BackupOptions{DataDir: src, Store: f.store, Key: restoreKey})
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "data")
	writeTree(t, target, existingData)
	old := readTree(t, target)
	restore := restoreArgs(target, restoreKey, existingData)
	dir := largeDataDir(t)

	backingUp := f.stallUpload(t, dir, backupKey, backupID)
	proxy := startGatedProxy(t, hostPort(f.srv.Endpoint), gateDownload, m.Archive.Size/2)
	restoring := startMover(t, f.srv.Env(), append(restore, f.proxiedFlags(proxy)...)...)
	proxy.waitStalled(t, restoring)
	f.srv.Stop(t)
	expectFailure(t, backingUp.result(t, "backup"), string(moverprotocol.ReasonUnavailable), true)
	expectFailure(t, restoring.result(t, "restore"), string(moverprotocol.ReasonUnavailable), true)
	assertUntouched(t, target, old)
	f.srv.Restart(t)

	if got := storedKeys(t, f.store, backupKey); len(got) != 0 {
		t.Errorf("the failed backup left %v visible", got)
	}
	// With the service down the mover could not abort its upload; the
	// next attempt does.
	if left := f.incompleteUploads(t, backupKey); len(left) != 1 {
		t.Errorf("uploads open after the outage: %v, want the failed attempt's", left)
	}
	f.retryBackup(t, dir, backupKey, backupID)

	retry := runMover(t, f.srv.Env(), append(restore, s3Flags(f.srv, testBucket)...)...)
	if retry.code != 0 {
		t.Fatalf("the restore's retry failed: %s\n%s", retry.term, retry.stderr)
	}
	checkRestored(t, target, readTree(t, src), old)
}

// retryBackup runs the backup of dir under key again, as the Job's next
// attempt, and checks that it stores the whole artifact, which its
// manifest verifies, with no multipart upload left open.
func (f *faultEnv) retryBackup(t *testing.T, dir, key, backupID string) {
	t.Helper()
	ctx := context.Background()
	retry := runMover(t, f.srv.Env(), append([]string{"backup", "--data-dir", dir, "--key", key,
		"--" + moverprotocol.FlagBackupID, backupID}, s3Flags(f.srv, testBucket)...)...)
	if retry.code != 0 {
		t.Fatalf("the backup's retry failed: %s\n%s", retry.term, retry.stderr)
	}
	if left := f.incompleteUploads(t, key); len(left) > 0 {
		t.Errorf("multipart uploads left open after the retry: %v", left)
	}
	if got := storedKeys(t, f.store, key); !slices.Equal(got, []string{key + "/data.tar.gz", key + "/manifest.json"}) {
		t.Errorf("store holds %v after the retry, want the archive and its manifest", got)
	}
	m, err := Inspect(ctx, InspectOptions{Store: f.store, Key: key})
	if err != nil {
		t.Fatalf("the retried backup does not inspect: %v", err)
	}
	if s := retry.success; s.Checksum != "sha256:"+m.Archive.SHA256 || s.Size != m.Archive.Size {
		t.Errorf("the retry reported %s, %d bytes; the manifest says sha256:%s, %d bytes", s.Checksum, s.Size, m.Archive.SHA256, m.Archive.Size)
	}
	// Restore checks every file and the whole archive against the manifest.
	restored := t.TempDir()
	if _, err := Restore(ctx, RestoreOptions{DataDir: restored, Store: f.store, Key: key}); err != nil {
		t.Fatalf("the retried backup does not verify: %v", err)
	}
	if d := diffTrees(readTree(t, dir), readTree(t, restored)); d != "" {
		t.Errorf("the retried backup restores other data:\n%s", d)
	}
}

// expectMoverDirsSettled checks the mover's own entries of a data
// directory after a restore: no staging directory left, and the old data,
// if there was any, kept once as it was.
func expectMoverDirsSettled(t *testing.T, mover map[string]map[string]treeEntry, old map[string]treeEntry) {
	t.Helper()
	if left := withPrefix(mover, stagingPrefix); len(left) > 0 {
		t.Errorf("staging directories left behind: %v", left)
	}
	asides := withPrefix(mover, preRestorePrefix)
	switch {
	case old == nil && len(asides) > 0:
		t.Errorf("pre-restore directories %v, want none: there was no data to keep", asides)
	case old == nil:
	case len(asides) != 1:
		t.Errorf("pre-restore directories %v, want one", asides)
	default:
		if d := diffTrees(old, mover[asides[0]]); d != "" {
			t.Errorf("%s does not hold the old data as it was:\n%s", asides[0], d)
		}
	}
}
