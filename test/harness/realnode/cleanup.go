package realnode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot holds the host's cgroup hierarchies (v1, and v2 in unified/).
const cgroupRoot = "/sys/fs/cgroup"

// cleanUp removes what a node, running or crashed, has left: its
// processes, its containers, its mounts, kube-proxy's nftables tables, its
// network, its cgroups and its state (with the volumes of
// local-path-provisioner). Each step runs even when one before it failed.
func (n *Node) cleanUp() error {
	errs := []error{killProcessesOf(n.opts.Root)}
	errs = append(errs, killCgroups(containerdNamespace)...)
	errs = append(errs, unmountUnder(n.opts.Root), deleteKubeProxyTables(), n.tearDownNetwork(), removeStateUnder(n.opts.Root))
	return errors.Join(errs...)
}

// cleanUpRoot removes what a crashed node with root left there, when root
// is another than current's: its processes, mounts and state. The rest of
// what it left (containers, kube-proxy's tables, network, cgroups) is
// machine-wide, and cleanUp removes it.
func cleanUpRoot(root, current string) error {
	if root == "" || filepath.Clean(root) == filepath.Clean(current) || !isNodeRoot(root) {
		return nil
	}
	return errors.Join(killProcessesOf(root), unmountUnder(root), removeStateUnder(root))
}

// isNodeRoot reports whether root looks like a node's root, as Prepare
// lays it out (containerd/ and kubelet/ in it), so that a lock file naming
// anything else never has its contents removed.
func isNodeRoot(root string) bool {
	if !filepath.IsAbs(root) || filepath.Clean(root) == "/" {
		return false
	}
	for _, dir := range []string{"containerd", "kubelet"} {
		if fi, err := os.Stat(filepath.Join(root, dir)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// killProcessesOf SIGKILLs every process whose command line names root:
// containerd, the kubelet and the shims (given containerd's socket).
func killProcessesOf(root string) error {
	self := os.Getpid()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	var killed []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(root+"/")) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return waitGone(killed)
}

// killCgroups SIGKILLs the processes of every cgroup under name, in every
// hierarchy, and removes those cgroups, deepest first.
func killCgroups(name string) []error {
	var errs []error
	hierarchies, _ := filepath.Glob(filepath.Join(cgroupRoot, "*", name))
	for _, top := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
		for _, dir := range dirs {
			errs = append(errs, killCgroupProcs(dir), removeCgroup(dir))
		}
	}
	return errs
}

func killCgroupProcs(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			pids = append(pids, pid)
		}
	}
	return waitGone(pids)
}

// removeCgroup removes an empty cgroup, retrying while the kernel still
// counts a killed process in it.
func removeCgroup(dir string) error {
	var err error
	for range 50 {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, err)
}

// waitGone waits up to 10s for the processes to be gone.
func waitGone(pids []int) error {
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("process %d outlived SIGKILL", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// unmountUnder detaches every mount at or below root, deepest first: the
// kubelet's volumes and the pods' network namespaces.
func unmountUnder(root string) error {
	mounts, err := MountsUnder(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range mounts {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// MountsUnder lists the mount points at or below root, deepest first.
func MountsUnder(root string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if p := unescapeMount(fields[4]); p == root || strings.HasPrefix(p, root+"/") {
			out = append(out, p)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeStateUnder removes root's contents but for its logs.
func removeStateUnder(root string) error {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() != "logs" {
			errs = append(errs, os.RemoveAll(filepath.Join(root, e.Name())))
		}
	}
	return errors.Join(errs...)
}
