//go:build linux

package main

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	values := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, tc := range []struct {
		p    float64
		want float64
	}{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {1, 1}, {0, 1}} {
		if got := percentile(values, tc.p); got != tc.want {
			t.Errorf("percentile(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if got := percentile(nil, 50); got != 0 {
		t.Errorf("percentile of nothing = %v, want 0", got)
	}
	if values[0] != 5 {
		t.Error("percentile sorted its input in place")
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	actions := map[string]time.Time{"a": at(0), "b": at(1), "c": at(2)}

	c := summarize(3, actions, map[string]time.Time{"a": at(3), "b": at(5), "c": at(4)}, at(100))
	if c.Want != 3 || c.Reached != 3 {
		t.Fatalf("want/reached = %d/%d, want 3/3", c.Want, c.Reached)
	}
	// First action at 0, last object at 5; latencies 3, 4, 2.
	if c.AllSeconds != 5 || c.P50Seconds != 3 || c.P99Seconds != 4 || c.MaxSeconds != 4 {
		t.Errorf("got %+v", c)
	}

	partial := summarize(3, actions, map[string]time.Time{"a": at(3)}, at(60))
	if partial.Reached != 1 || partial.AllSeconds != 60 {
		t.Errorf("a partial convergence runs to the end of the wait: got %+v", partial)
	}

	// Actions cut short: the objects never acted on are not reached.
	cut := summarize(5, actions, map[string]time.Time{"a": at(3), "b": at(5), "c": at(4)}, at(60))
	if cut.Want != 5 || cut.Reached != 3 || cut.AllSeconds != 60 {
		t.Errorf("got %+v", cut)
	}
}

func TestRatio(t *testing.T) {
	if got := ratio(3, 2); got != 1.5 {
		t.Errorf("ratio(3, 2) = %v", got)
	}
	if ratio(3, 0) != 0 || ratio(0, 3) != 0 || ratio(-1, 2) != 0 {
		t.Error("a ratio with a missing or non-positive side must be 0")
	}
}

func TestForEach(t *testing.T) {
	names := echoNames(100)
	var calls atomic.Int32
	started, err := forEach(context.Background(), names, 8, func(context.Context, string) error {
		calls.Add(1)
		return nil
	})
	if err != nil || len(started) != 100 || calls.Load() != 100 {
		t.Fatalf("got %d started, %d calls, err %v", len(started), calls.Load(), err)
	}

	boom := errors.New("boom")
	started, err = forEach(context.Background(), names, 4, func(_ context.Context, name string) error {
		if name == names[10] {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if _, ok := started[names[10]]; ok || len(started) == 100 {
		t.Errorf("a failed call must not be recorded, and feeding must stop: %d started", len(started))
	}
}

func TestSummarizeUsage(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	proc := []procSample{
		{At: at(0), procUsage: procUsage{RSS: 100, HWM: 100, CPUSeconds: 1}},
		{At: at(1), procUsage: procUsage{RSS: 300, HWM: 300, CPUSeconds: 2}},
		{At: at(2), procUsage: procUsage{RSS: 200, HWM: 300, CPUSeconds: 4}},
		{At: at(3), procUsage: procUsage{RSS: 250, HWM: 350, CPUSeconds: 7}},
	}
	heap := []heapSample{{At: at(0), Alloc: 10, Inuse: 20}, {At: at(2), Alloc: 30, Inuse: 40}, {At: at(3), Alloc: 5, Inuse: 6}}

	u := summarizeUsage(proc, heap, at(0), at(2))
	want := usage{PeakRSSBytes: 300, EndRSSBytes: 200, HWMBytes: 300, CPUSeconds: 3,
		PeakHeapAllocBytes: 30, PeakHeapInuseBytes: 40, EndHeapAllocBytes: 30, EndHeapInuseBytes: 40}
	if u != want {
		t.Errorf("window [0s, 2s]:\n got %+v\nwant %+v", u, want)
	}

	// A window starting between samples counts the CPU from the last
	// sample before it.
	if u := summarizeUsage(proc, heap, at(1).Add(time.Millisecond), at(3)); u.CPUSeconds != 5 || u.PeakRSSBytes != 250 {
		t.Errorf("window (1s, 3s]: got %+v", u)
	}
}

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-n", "20, 300", "-operators", "stock,echo,stock", "-idle", "2m"})
	if err != nil {
		t.Fatal(err)
	}
	if len(o.ns) != 2 || o.ns[0] != 20 || o.ns[1] != 300 {
		t.Errorf("ns = %v", o.ns)
	}
	if len(o.systems) != 2 || o.systems[0] != systemStock || o.systems[1] != systemEcho {
		t.Errorf("systems = %v", o.systems)
	}
	if o.idle != 2*time.Minute || o.baseline != time.Minute || !o.startup {
		t.Errorf("defaults or durations wrong: %+v", o)
	}
	for _, bad := range [][]string{{"-n", "0"}, {"-n", "x"}, {"-operators", "kopf"}, {"-idle", "0s"}} {
		if _, err := parseFlags(bad); err == nil {
			t.Errorf("parseFlags(%v) accepted", bad)
		}
	}
}
