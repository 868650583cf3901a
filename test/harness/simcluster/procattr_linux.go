package simcluster

import "syscall"

// childSysProcAttr puts a child in its own process group (so a terminal's
// Ctrl-C reaches only this process, which then stops the child in order)
// and has the kernel kill it if this process dies.
func childSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
