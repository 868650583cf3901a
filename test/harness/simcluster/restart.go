package simcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Component names one process of a running cluster, for StopComponent,
// KillComponent, StartComponent and RestartComponent.
type Component string

// The components of a cluster; each is also the name of its log file.
const (
	ComponentEtcd              Component = "etcd"
	ComponentAPIServer         Component = "kube-apiserver"
	ComponentControllerManager Component = "kube-controller-manager"
	ComponentScheduler         Component = "kube-scheduler"
	ComponentKwok              Component = "kwok"
)

// Components lists every component, in start order.
func Components() []Component {
	return []Component{ComponentEtcd, ComponentAPIServer, ComponentControllerManager, ComponentScheduler, ComponentKwok}
}

// StopComponent stops one component as Stop does (SIGTERM, then SIGKILL
// after 10s) and returns once its process is gone. Stopping a component
// that is not running does nothing. The rest of the cluster keeps running;
// StartComponent brings the component back.
func (c *Cluster) StopComponent(ctx context.Context, comp Component) error {
	return c.halt(ctx, comp, false)
}

// KillComponent ends one component with SIGKILL, as a crash or an OOM kill
// would, and returns once its process is gone. Killing a component that is
// not running does nothing.
func (c *Cluster) KillComponent(ctx context.Context, comp Component) error {
	return c.halt(ctx, comp, true)
}

// StartComponent starts a component stopped by StopComponent or
// KillComponent again, with the same flags, ports, certificates and data
// (etcd's data directory is kept), so that every client, the kubeconfig
// file included, works again. It returns once the component serves:
//   - etcd: its /health answers and, if kube-apiserver runs, kube-apiserver's
//     /readyz passes (it has reconnected to etcd);
//   - kube-apiserver: its /readyz passes;
//   - kube-controller-manager, kube-scheduler, KWOK: the process has
//     started (they open no port to ask).
//
// Starting etcd or kube-apiserver may take up to a minute whatever ctx
// says; ctx bounds the wait for readiness. Starting a component that runs
// is an error.
func (c *Cluster) StartComponent(ctx context.Context, comp Component) error {
	c.compMu.Lock()
	defer c.compMu.Unlock()
	switch comp {
	case ComponentEtcd:
		if c.controlPlaneRunning(comp) {
			return fmt.Errorf("%s is running", comp)
		}
		if err := c.cp.Etcd.Start(); err != nil {
			return fmt.Errorf("starting %s: %w (logs in %s)", comp, err, c.workDir)
		}
		if !c.controlPlaneRunning(ComponentAPIServer) {
			return nil
		}
		return c.waitAPIServerReady(ctx)
	case ComponentAPIServer:
		if c.controlPlaneRunning(comp) {
			return fmt.Errorf("%s is running", comp)
		}
		if err := c.cp.APIServer.Start(); err != nil {
			return fmt.Errorf("starting %s: %w (logs in %s)", comp, err, c.workDir)
		}
		return c.waitAPIServerReady(ctx)
	}
	i, err := c.childIndex(comp)
	if err != nil {
		return err
	}
	return c.relaunchChild(i)
}

// RestartComponent stops a component (StopComponent) and starts it again
// (StartComponent).
func (c *Cluster) RestartComponent(ctx context.Context, comp Component) error {
	if err := c.StopComponent(ctx, comp); err != nil {
		return err
	}
	return c.StartComponent(ctx, comp)
}

// halt stops or kills one component and waits until its process is gone.
func (c *Cluster) halt(ctx context.Context, comp Component, kill bool) error {
	c.compMu.Lock()
	defer c.compMu.Unlock()
	switch comp {
	case ComponentEtcd, ComponentAPIServer:
		return c.haltControlPlane(ctx, comp, kill)
	}
	i, err := c.childIndex(comp)
	if err != nil {
		return err
	}
	ch := c.children[i]
	if !kill {
		// A component that needed SIGKILL is gone all the same.
		_ = ch.stop(childStopTimeout)
	} else if !ch.exited() {
		_ = syscall.Kill(-ch.cmd.Process.Pid, syscall.SIGKILL)
	}
	select {
	case <-ch.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s to exit: %w", comp, ctx.Err())
	}
}

// haltControlPlane stops or kills etcd or kube-apiserver, which envtest
// runs, and removes its pid file once the process is gone.
func (c *Cluster) haltControlPlane(ctx context.Context, comp Component, kill bool) error {
	pidFile := filepath.Join(c.pidDir, string(comp)+".pid")
	pid, ok := readPid(pidFile)
	if !ok || !processAlive(pid) {
		return nil
	}
	var stopErr error
	switch {
	case kill:
		if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	case comp == ComponentEtcd:
		stopErr = c.cp.Etcd.Stop()
	default:
		stopErr = c.cp.APIServer.Stop()
	}
	// envtest's Stop sends SIGKILL after its timeout without waiting for the
	// process; a restart must not race the old one for the port.
	if err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		return !processAlive(pid), nil
	}); err != nil {
		return errors.Join(stopErr, fmt.Errorf("waiting for %s (pid %d) to exit: %w", comp, pid, err))
	}
	if err := os.Remove(pidFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if stopErr != nil && !kill {
		// Stopped the hard way: say so, the process is gone either way.
		return fmt.Errorf("stopping %s: %w", comp, stopErr)
	}
	return nil
}

// controlPlaneRunning reports whether etcd or kube-apiserver runs, by its
// pid file (which the wrapper script writes and haltControlPlane removes).
func (c *Cluster) controlPlaneRunning(comp Component) bool {
	pid, ok := readPid(filepath.Join(c.pidDir, string(comp)+".pid"))
	return ok && processAlive(pid)
}

// waitAPIServerReady polls kube-apiserver's /readyz, which also checks its
// connection to etcd, until it passes.
func (c *Cluster) waitAPIServerReady(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, last = c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(rctx)
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	if last != nil {
		// Only the wait's outcome is wrapped, as in waitFor.
		return fmt.Errorf("waiting for kube-apiserver to be ready: %w (last error: %s; logs in %s)", err, last.Error(), c.workDir)
	}
	return fmt.Errorf("waiting for kube-apiserver to be ready: %w (logs in %s)", err, c.workDir)
}

// childIndex finds a component started by startChild.
func (c *Cluster) childIndex(comp Component) (int, error) {
	for i, ch := range c.children {
		if ch.name == string(comp) {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown component %q", comp)
}

// relaunchChild starts the i-th child again with its command line,
// environment, directory and log, through the starter (so it gets the
// parent-death signal), and records its new pid for the reaper.
func (c *Cluster) relaunchChild(i int) error {
	old := c.children[i]
	if !old.exited() {
		return fmt.Errorf("%s is running", old.name)
	}
	cmd := &exec.Cmd{
		Path:        old.cmd.Path,
		Args:        slices.Clone(old.cmd.Args),
		Env:         old.cmd.Env,
		Dir:         old.cmd.Dir,
		Stdout:      old.cmd.Stdout,
		Stderr:      old.cmd.Stderr,
		SysProcAttr: childSysProcAttr(),
	}
	ch := &child{
		name:    old.name,
		cmd:     cmd,
		logPath: old.logPath,
		pidFile: old.pidFile,
		done:    make(chan struct{}),
	}
	if err := c.starter.start(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", ch.name, err)
	}
	_ = os.WriteFile(ch.pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	c.children[i] = ch
	go func() {
		ch.err = cmd.Wait()
		_ = os.Remove(ch.pidFile)
		close(ch.done)
	}()
	return nil
}
