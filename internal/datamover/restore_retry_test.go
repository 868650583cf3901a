package datamover

// A restore stopped after its swap completed but before it reported its
// result: the Job's retry, carrying the same restore identity, finds the
// data it restored and reports it; any other restore still finds data in
// its way.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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

// retryRestoreID is the identity of the restore whose attempt was stopped.
const retryRestoreID = "uid-r1"

// stageRestore runs a restore of key with identity id into target as
// Restore does up to its swap: the checks, the verified download into a
// staging directory and the marker. It returns the restore and its staged
// data.
func stageRestore(t *testing.T, store backupstore.Store, key, target string, policy ExistingDataPolicy, id string) (*restore, string) {
	t.Helper()
	ctx := context.Background()
	r, err := newRestore(RestoreOptions{DataDir: target, Store: store, Key: key, ExistingData: policy, RestoreID: id})
	if err != nil {
		t.Fatal(err)
	}
	m, err := fetchManifest(ctx, store, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.checkTarget(m); err != nil {
		t.Fatal(err)
	}
	staging, err := os.MkdirTemp(r.root, stagingPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.download(ctx, m, backupstore.ArchiveKey(key, m.Compression), staging); err != nil {
		t.Fatal(err)
	}
	stagedData := filepath.Join(staging, strings.TrimSuffix(backupstore.DataPrefix, "/"))
	if err := r.stageRestoreMarker(stagedData, m); err != nil {
		t.Fatal(err)
	}
	return r, stagedData
}

// restoreToSwap runs a restore of key with identity id into target up to
// the end of its swap, as Restore does, and no further: the plan is gone,
// the restored data and its marker are in place, the staging directory
// is still there and the restored directories still have the staging
// mode. That is what a mover killed right after its swap leaves (see
// stopSwapAfter): it reported nothing.
func restoreToSwap(t *testing.T, store backupstore.Store, key, target string, policy ExistingDataPolicy, id string) {
	t.Helper()
	r, stagedData := stageRestore(t, store, key, target, policy, id)
	if _, err := r.swap(stagedData); err != nil {
		t.Fatal(err)
	}
}

// inodes maps every regular file below dir, staging directories left
// out, to its inode: a file restored again is a new one.
func inodes(t *testing.T, dir string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), stagingPrefix) {
			return filepath.SkipDir
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = info.Sys().(*syscall.Stat_t).Ino
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// markerOf returns the restore marker of the data directory target; it
// fails the test when there is none.
func markerOf(t *testing.T, target string) restoreMarker {
	t.Helper()
	mk, err := readRestoreMarker(target)
	if err != nil || mk == nil {
		t.Fatalf("restore marker of %s: %v, %v", target, mk, err)
	}
	return *mk
}

// checkRestoredWithMarker is checkRestored for a restore with identity id:
// its marker is in the data directory besides the restored data, the old
// data (when old is not nil) is in the one pre-restore directory, and
// there is nothing else.
func checkRestoredWithMarker(t *testing.T, target, id string, want, old map[string]treeEntry) {
	t.Helper()
	data, mover := splitTree(t, target)
	if d := diffTrees(want, data); d != "" {
		t.Errorf("the restored data differs from the backup's source:\n%s", d)
	}
	if got := markerOf(t, target).RestoreID; got != id {
		t.Errorf("the marker names restore %q, want %q", got, id)
	}
	delete(mover, restoreMarkerName)
	expectMoverDirsSettled(t, mover, old)
}

// swapBackup backs src up under key into a filesystem store rooted at
// root.
func swapBackup(t *testing.T, src, key string) (store *backupstore.FSStore, root string) {
	t.Helper()
	root = t.TempDir()
	store, err := backupstore.NewFSStore(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Backup(context.Background(), BackupOptions{DataDir: src, Store: store, Key: key}); err != nil {
		t.Fatal(err)
	}
	return store, root
}

// TestCLIRestoreRetriedAfterSwap: the Job's retry of a restore whose swap
// completed, with the same identity, succeeds with the result a complete
// first attempt reports, without restoring again: the restored files are
// the very same (same inodes, same bytes), no second pre-restore directory
// appears, the staging directory left is removed and the directories get
// their recorded modes, which the stopped attempt had not set yet.
func TestCLIRestoreRetriedAfterSwap(t *testing.T) {
	needManager(t)
	src := restoreSource(t, 64<<10)
	want := readTree(t, src)
	const key = "retry/b1"
	store, root := swapBackup(t, src, key)
	// What a first attempt that is not stopped reports.
	complete := runMover(t, nil, append(restoreArgs(filepath.Join(t.TempDir(), "data"), key, nil),
		"--"+moverprotocol.FlagRestoreID, retryRestoreID, "--fs-root", root)...)
	if complete.code != 0 {
		t.Fatalf("restore failed: %s\n%s", complete.term, complete.stderr)
	}
	for _, c := range []struct {
		name string
		old  map[string]string // nil: a new volume
	}{
		{"Fail on a new volume", nil},
		{"Replace over old data", existingData},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "data")
			var old map[string]treeEntry
			if c.old != nil {
				writeTree(t, target, c.old)
				old = readTree(t, target)
			}
			restoreToSwap(t, store, key, target, policyFor(c.old), retryRestoreID)
			if _, mover := splitTree(t, target); len(withPrefix(mover, stagingPrefix)) != 1 {
				t.Fatalf("the stopped attempt left %v, want its staging directory", mover)
			}
			files := inodes(t, target)

			res := runMover(t, nil, append(restoreArgs(target, key, c.old),
				"--"+moverprotocol.FlagRestoreID, retryRestoreID, "--fs-root", root)...)
			if res.code != 0 {
				t.Fatalf("the retry failed: %s\n%s", res.term, res.stderr)
			}
			if res.success != complete.success {
				t.Errorf("the retry reported %+v, want what a complete attempt reports: %+v", res.success, complete.success)
			}
			if !strings.Contains(res.stderr, "restore already completed by an earlier attempt") {
				t.Errorf("the retry did not say the restore was already done:\n%s", res.stderr)
			}
			checkRestoredWithMarker(t, target, retryRestoreID, want, old)
			if got := inodes(t, target); !maps.Equal(got, files) {
				t.Errorf("the retry replaced files: inodes %v, were %v", got, files)
			}
		})
	}
}

// TestCLIRestoreAfterSwapOfAnother: the data a stopped restore swapped in
// is data to any other restore: another identity, or none (a Job of an
// older operator), fails under Fail as before, leaving it all as it is;
// another identity under Replace keeps it aside, without the first
// restore's marker, and leaves its own.
func TestCLIRestoreAfterSwapOfAnother(t *testing.T) {
	needManager(t)
	src := restoreSource(t, 4<<10)
	want := readTree(t, src)
	const key = "retry/b1"
	store, root := swapBackup(t, src, key)
	target := filepath.Join(t.TempDir(), "data")
	restoreToSwap(t, store, key, target, ExistingDataFail, retryRestoreID)
	swapped, _ := splitTree(t, target)
	swappedMarker := markerOf(t, target)

	for _, c := range []struct {
		name string
		args []string
	}{
		{"another restore", []string{"--" + moverprotocol.FlagRestoreID, "uid-r2"}},
		{"a restore without identity", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runMover(t, nil, append(append(restoreArgs(target, key, nil), c.args...), "--fs-root", root)...)
			expectFailure(t, res, string(moverprotocol.ReasonTargetNotEmpty), false)
			if data, _ := splitTree(t, target); diffTrees(swapped, data) != "" || markerOf(t, target) != swappedMarker {
				t.Errorf("the failed restore changed the data or the marker:\n%s", diffTrees(swapped, data))
			}
		})
	}

	t.Run("another restore replacing it", func(t *testing.T) {
		res := runMover(t, nil, append(restoreArgs(target, key, existingData),
			"--"+moverprotocol.FlagRestoreID, "uid-r2", "--fs-root", root)...)
		if res.code != 0 {
			t.Fatalf("restore failed: %s\n%s", res.term, res.stderr)
		}
		checkRestoredWithMarker(t, target, "uid-r2", want, swapped)
	})
}

// killMoverAtChmod runs "manager <args>" under strace, which kills it
// with SIGKILL as it enters its first chmod of path (before the chmod
// happens). It skips the test where strace is missing or may not trace.
func killMoverAtChmod(t *testing.T, path string, args ...string) {
	t.Helper()
	needManager(t)
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed: no real kill after the swap")
	}
	if out, err := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		t.Skipf("strace may not trace here: %v: %s", err, out)
	}
	term := filepath.Join(t.TempDir(), "termination-log")
	cmd := exec.Command(strace, append([]string{"-f", "-qq", "-o", "/dev/null",
		"-e", "trace=chmod,fchmodat", "-e", "inject=chmod,fchmodat:signal=SIGKILL", "-P", path, "--",
		managerBin}, append(args, "--termination-log", term)...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killedBySIGKILL(t, cmd, &stderr)
	if _, err := os.Stat(term); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the killed mover wrote its termination log (%v): it was killed too late\n%s", err, &stderr)
	}
}

// TestCLIRestoreReallyKilledAfterSwap kills the real mover, not a
// reproduction of it, once its swap is complete: as it gives the first
// restored directory its mode, before it reports anything. The Job's
// retry reports the restore done.
func TestCLIRestoreReallyKilledAfterSwap(t *testing.T) {
	needManager(t)
	src := restoreSource(t, 64<<10)
	want := readTree(t, src)
	const key = "retry/b1"
	_, root := swapBackup(t, src, key)
	target := filepath.Join(t.TempDir(), "data")
	args := append(restoreArgs(target, key, nil), "--"+moverprotocol.FlagRestoreID, retryRestoreID, "--fs-root", root)
	// Directories get their modes deepest and last first: journal is the
	// first.
	killMoverAtChmod(t, filepath.Join(target, "journal"), args...)

	data, mover := splitTree(t, target)
	if data["journal"].Mode.Perm() != stagedPerm || data["notes.txt"].Data != want["notes.txt"].Data {
		t.Fatalf("after the kill the data directory holds %v, want the restored data with staged directories", data)
	}
	if len(withPrefix(mover, stagingPrefix)) != 1 {
		t.Fatalf("after the kill the data directory holds %v, want the staging directory still there", mover)
	}
	res := runMover(t, nil, args...)
	if res.code != 0 {
		t.Fatalf("the retry failed: %s\n%s", res.term, res.stderr)
	}
	if !strings.Contains(res.stderr, "restore already completed by an earlier attempt") {
		t.Errorf("the retry did not say the restore was already done:\n%s", res.stderr)
	}
	checkRestoredWithMarker(t, target, retryRestoreID, want, nil)
}

// TestRestoreMarker: a restore with an identity leaves a marker naming it,
// its backup and archive, which backups leave out and no restore counts as
// data; one without leaves none.
func TestRestoreMarker(t *testing.T) {
	ctx := context.Background()
	store := newFSStore(t)
	m := craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "new"}}, nil)

	target := t.TempDir()
	if _, err := Restore(ctx, RestoreOptions{DataDir: target, Store: store, Key: "k", RestoreID: "uid-1"}); err != nil {
		t.Fatal(err)
	}
	if got, want := markerOf(t, target), (restoreMarker{RestoreID: "uid-1", Key: "k", Archive: m.Archive}); got != want {
		t.Errorf("marker = %+v, want %+v", got, want)
	}
	info, err := os.Lstat(filepath.Join(target, restoreMarkerName))
	if err != nil || info.Mode() != restoreMarkerPerm {
		t.Errorf("marker: %v, %v; want a file of mode %v", info, err, os.FileMode(restoreMarkerPerm))
	}
	if !isMoverEntry(restoreMarkerName) {
		t.Errorf("%s would be backed up and counted as data", restoreMarkerName)
	}
	backedUp, err := Backup(ctx, BackupOptions{DataDir: target, Store: store, Key: "again"})
	if err != nil {
		t.Fatal(err)
	}
	if backedUp.DataFiles() != 1 {
		t.Errorf("a backup of the restored data holds %v", backedUp.Files)
	}

	without := t.TempDir()
	if _, err := Restore(ctx, RestoreOptions{DataDir: without, Store: store, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	if mk, err := readRestoreMarker(without); mk != nil || err != nil {
		t.Errorf("a restore without identity left the marker %+v (%v)", mk, err)
	}
}

// TestRestoreMarkerNotOwn: a marker is a restore's own only when it names
// the restore, its key and the archive of the backup under that key, and
// reads as one. Any other is ignored: the data it sits with is data, and
// a Replace puts the restore's own marker in its place, not in the
// pre-restore directory.
func TestRestoreMarkerNotOwn(t *testing.T) {
	ctx := context.Background()
	store := newFSStore(t)
	m := craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "new"}}, nil)
	craftBackup(t, store, "k2", backupstore.CompressionGzip, []craftEntry{{Name: "data/f", Data: "other"}}, nil)
	for _, c := range []struct {
		name   string
		marker string
	}{
		{"another restore", fmt.Sprintf(`{"restoreID":"uid-2","key":"k","archive":{"name":%q,"size":%d,"sha256":%q}}`,
			m.Archive.Name, m.Archive.Size, m.Archive.SHA256)},
		{"another key", fmt.Sprintf(`{"restoreID":"uid-1","key":"k2","archive":{"name":%q,"size":%d,"sha256":%q}}`,
			m.Archive.Name, m.Archive.Size, m.Archive.SHA256)},
		{"another archive", fmt.Sprintf(`{"restoreID":"uid-1","key":"k","archive":{"name":%q,"size":%d,"sha256":%q}}`,
			m.Archive.Name, m.Archive.Size, strings.Repeat("0", 64))},
		{"not JSON", `{"restoreID":"uid-1"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := t.TempDir()
			writeTree(t, target, map[string]string{"f": "new", restoreMarkerName: c.marker})
			before := readTree(t, target)
			opts := RestoreOptions{DataDir: target, Store: store, Key: "k", RestoreID: "uid-1"}
			if _, err := Restore(ctx, opts); !errors.Is(err, backupstore.ErrTargetNotEmpty) {
				t.Fatalf("Restore = %v, want ErrTargetNotEmpty", err)
			}
			assertUntouched(t, target, before)

			opts.ExistingData = ExistingDataReplace
			if _, err := Restore(ctx, opts); err != nil {
				t.Fatal(err)
			}
			if got := markerOf(t, target); got != newRestoreMarker("uid-1", "k", m) {
				t.Errorf("marker after Replace = %+v", got)
			}
			_, mover := splitTree(t, target)
			asides := withPrefix(mover, preRestorePrefix)
			asides = slices.DeleteFunc(asides, func(n string) bool { return n == restoreMarkerName })
			if len(asides) != 1 || len(mover[asides[0]]) != 1 || mover[asides[0]]["f"].Data != "new" {
				t.Errorf("pre-restore directories %v hold %v, want the old f only", asides, mover)
			}
		})
	}
}

// TestRestoreUnfinishedSwapWithMarker: a marker counts only once the swap
// that moved it in is complete. Whichever step of its swap a restore with
// an identity was killed after, its marker possibly in place already, the
// retry undoes the swap and restores the backup whole.
func TestRestoreUnfinishedSwapWithMarker(t *testing.T) {
	ctx := context.Background()
	src := restoreSource(t, 4<<10)
	want := readTree(t, src)
	const key = "swap/b1"
	store, _ := swapBackup(t, src, key)
	for k, steps := 0, 0; k == 0 || k <= steps; k++ {
		t.Run(fmt.Sprintf("killed after step %d", k), func(t *testing.T) {
			target := filepath.Join(t.TempDir(), "data")
			writeTree(t, target, existingData)
			old := readTree(t, target)
			steps = stopSwapWithMarkerAfter(t, store, key, target, k)

			var logs bytes.Buffer
			opts := RestoreOptions{DataDir: target, Store: store, Key: key, ExistingData: ExistingDataReplace,
				RestoreID: retryRestoreID, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			if _, err := Restore(ctx, opts); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "undoing the swap of an earlier restore") ||
				strings.Contains(logs.String(), "already completed") {
				t.Errorf("the retry did not undo the swap and restore again:\n%s", logs.String())
			}
			checkRestoredWithMarker(t, target, retryRestoreID, want, old)
		})
	}
}

// stopSwapWithMarkerAfter is stopSwapAfter for a restore with an
// identity, under Replace: the marker is staged and is the first entry the
// swap moves in.
func stopSwapWithMarkerAfter(t *testing.T, store backupstore.Store, key, target string, k int) int {
	t.Helper()
	r, stagedData := stageRestore(t, store, key, target, ExistingDataReplace, retryRestoreID)
	plan, err := r.planSwap(stagedData)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Staged[0] != restoreMarkerName {
		t.Fatalf("the swap moves %v in, the marker not first", plan.Staged)
	}
	return swapUpTo(t, r, stagedData, plan, k)
}

// TestRestoreRefusesArchiveHoldingMarker: an archive holding an entry by
// the marker's name, which no backup writes, cannot be restored with an
// identity: the data directory is left as it was.
func TestRestoreRefusesArchiveHoldingMarker(t *testing.T) {
	store := newFSStore(t)
	craftBackup(t, store, "k", backupstore.CompressionGzip, []craftEntry{
		{Name: backupstore.DataPrefix + restoreMarkerName, Data: `{"restoreID":"uid-1"}`},
		{Name: "data/f", Data: "new"},
	}, nil)
	target := t.TempDir()
	writeTree(t, target, existingData)
	before := readTree(t, target)
	_, err := Restore(context.Background(), RestoreOptions{DataDir: target, Store: store, Key: "k",
		ExistingData: ExistingDataReplace, RestoreID: "uid-1"})
	if !errors.Is(err, backupstore.ErrUnsafePath) {
		t.Fatalf("Restore = %v, want ErrUnsafePath", err)
	}
	assertUntouched(t, target, before)
}
