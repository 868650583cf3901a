//go:build unix && !linux

package simcluster

import "syscall"

// childSysProcAttr puts a child in its own process group. Without a
// parent-death signal on this platform, the reaper alone cleans up after a
// parent that died without calling Stop.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
