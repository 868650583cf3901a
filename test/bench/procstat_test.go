//go:build linux

package main

import (
	"os"
	"testing"
)

func TestParseStatusMemory(t *testing.T) {
	status := []byte("Name:\tmanager\nVmPeak:\t 1000 kB\nVmHWM:\t   204800 kB\nVmRSS:\t   102400 kB\nThreads:\t12\n")
	rss, hwm, err := parseStatusMemory(status)
	if err != nil {
		t.Fatal(err)
	}
	if rss != 100<<20 || hwm != 200<<20 {
		t.Errorf("rss, hwm = %d, %d", rss, hwm)
	}
	if _, _, err := parseStatusMemory([]byte("Name:\tzombie\n")); err == nil {
		t.Error("a status without VmRSS must fail")
	}
}

func TestParseStatCPU(t *testing.T) {
	// The command name holds a space and a parenthesis; utime 250 and
	// stime 150 ticks are fields 14 and 15.
	stat := []byte("4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 12 0 100 0 0")
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if got != 4 {
		t.Errorf("cpu = %v s, want 4", got)
	}
	if _, err := parseStatCPU([]byte("4242 (x) S 1")); err == nil {
		t.Error("a short stat must fail")
	}
}

func TestReadProcUsageSelf(t *testing.T) {
	u, err := readProcUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if u.RSS == 0 || u.HWM < u.RSS {
		t.Errorf("implausible usage of this process: %+v", u)
	}
}
