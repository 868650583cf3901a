package localcluster

import (
	"syscall"
	"testing"
	"time"
)

// TestWhenInterrupted: a SIGTERM before release runs the cleanup, then
// exits with 130.
func TestWhenInterrupted(t *testing.T) {
	cleaned, exited := make(chan struct{}), make(chan int, 1)
	release := whenInterrupted(func() { close(cleaned) }, func(code int) { exited <- code })
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cleaned:
	case <-time.After(10 * time.Second):
		t.Fatal("a SIGTERM did not run the cleanup")
	}
	if code := <-exited; code != 130 {
		t.Errorf("exit code %d, want 130", code)
	}
	release()
}
