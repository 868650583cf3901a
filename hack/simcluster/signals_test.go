package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// lines is a log that hands each line written to it to the test.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

// awaitLine waits for a line of log that contains want.
func awaitLine(t *testing.T, log lines, want string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case line := <-log:
			if strings.Contains(line, want) {
				return
			}
		case <-timeout:
			t.Fatalf("no line with %q", want)
		}
	}
}

func signalSelf(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
		t.Fatal(err)
	}
}

// TestStopSignalsDuringTheTeardownAreIgnored: the first signal starts the
// teardown; the ones that follow within the grace period (a terminal's
// Ctrl-C, then the stop signal of the script that started simcluster)
// neither end the process nor stop the teardown.
func TestStopSignalsDuringTheTeardownAreIgnored(t *testing.T) {
	log, exits := make(lines, 10), make(chan int, 1)
	ctx, release := onStopSignals(time.Hour, log, func(code int) { exits <- code })
	defer release()
	if ctx.Err() != nil {
		t.Fatal("stopping before any signal")
	}
	signalSelf(t, syscall.SIGINT)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a SIGINT did not start the teardown")
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		signalSelf(t, sig)
		awaitLine(t, log, "ignored: still stopping")
	}
	select {
	case code := <-exits:
		t.Fatalf("a signal during the teardown ended the process (exit %d)", code)
	default:
	}
}

// TestAStopSignalAfterTheGracePeriodEndsAtOnce: a teardown that hangs
// past the grace period can still be cut short.
func TestAStopSignalAfterTheGracePeriodEndsAtOnce(t *testing.T) {
	log, exits := make(lines, 10), make(chan int, 1)
	ctx, release := onStopSignals(0, log, func(code int) { exits <- code })
	defer release()
	signalSelf(t, syscall.SIGTERM)
	<-ctx.Done()
	signalSelf(t, syscall.SIGINT)
	select {
	case code := <-exits:
		if code != 130 {
			t.Errorf("exit code %d, want 130", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a signal after the grace period did not end the process")
	}
	awaitLine(t, log, "ending at once")
}
