//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var mergeStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchFile writes results to a file in dir and returns its path.
func benchFile(t *testing.T, dir, name string, res *results) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := res.writeJSON(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// idleRun is a run of a minute started at start with idle minutes.
func idleRun(system string, n int, start time.Time, minutes ...float64) *runResult {
	mean := 0.0
	for _, m := range minutes {
		mean += m / float64(len(minutes))
	}
	return &runResult{System: system, N: n, Started: start, Seconds: 60,
		Idle: &idleResult{Minutes: minutes, Mean: mean, NetMean: mean - 10, BaselinePerMinute: 10}}
}

// mergeFixture writes two results files, a.json with five runs at N=100
// and N=300 and b.json with echo at N=300 on other settings, machine and
// version, and reads them back.
func mergeFixture(t *testing.T) (files []string, inputs []*results) {
	dir := t.TempDir()
	a := benchFile(t, dir, "a.json", &results{
		Started: mergeStart, Finished: mergeStart.Add(time.Hour),
		Args:     []string{"-n", "100,300", "-operators", "stock,echo,floor", "-idle", "2m"},
		Machine:  machineInfo{CPU: "cpu A", Cores: 2},
		Versions: versionInfo{EchoOperator: "v1"},
		Settings: settings{N: []int{100, 300}, Systems: []string{"stock", "echo", "floor"}, BaselineSeconds: 60, IdleSeconds: 120, SettleSeconds: 15, Workers: 32},
		Runs: []*runResult{
			idleRun(systemStock, 100, mergeStart, 400, 420), idleRun(systemEcho, 100, mergeStart, 50, 52), idleRun(systemFloor, 100, mergeStart, 30, 30),
			idleRun(systemStock, 300, mergeStart, 1000, 1200), idleRun(systemEcho, 300, mergeStart, 70, 72),
		},
	})
	b := benchFile(t, dir, "b.json", &results{
		Started:  mergeStart.Add(2 * time.Hour),
		Args:     []string{"-n", "300", "-operators", "echo", "-idle", "20s", "-baseline", "5s"},
		Machine:  machineInfo{CPU: "cpu B", Cores: 2},
		Versions: versionInfo{EchoOperator: "v2"},
		Settings: settings{N: []int{300}, Systems: []string{"echo"}, BaselineSeconds: 5, IdleSeconds: 20, SettleSeconds: 15, Workers: 32},
		Runs:     []*runResult{idleRun(systemEcho, 300, mergeStart.Add(2*time.Hour), 84)},
	})
	files = []string{a, b}
	for _, p := range files {
		r, err := readResults(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, r)
	}
	return files, inputs
}

func TestMerge(t *testing.T) {
	files, inputs := mergeFixture(t)
	merged := mergeResults(files, inputs, nil)

	var got []string
	for _, r := range merged.Runs {
		got = append(got, fmt.Sprintf("%s/%d from %s", r.System, r.N, filepath.Base(r.Source)))
	}
	want := []string{"echo/100 from a.json", "stock/100 from a.json", "floor/100 from a.json", "echo/300 from b.json", "stock/300 from a.json"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runs %q, want %q", got, want)
	}
	if merged.Machine.CPU != "cpu A" || merged.Versions.EchoOperator != "v1" {
		t.Errorf("machine and versions not the first file's: %+v %+v", merged.Machine, merged.Versions)
	}
	s := merged.Settings
	if !reflect.DeepEqual(s.N, []int{100, 300}) || !reflect.DeepEqual(s.Systems, allSystems) {
		t.Errorf("settings N %v systems %v", s.N, s.Systems)
	}
	if s.IdleSeconds != 0 || s.BaselineSeconds != 0 || s.SettleSeconds != 15 || s.Workers != 32 {
		t.Errorf("settings the sources differ on are not zero, or the others not kept: %+v", s)
	}
	if len(merged.Sources) != 2 || len(merged.Sources[0].Runs) != 4 ||
		!reflect.DeepEqual(merged.Sources[1].Runs, []runKey{{System: systemEcho, N: 300}}) ||
		merged.Sources[1].Settings.IdleSeconds != 20 {
		t.Errorf("sources %+v", merged.Sources)
	}
	if !merged.Started.Equal(mergeStart) || !merged.Finished.Equal(mergeStart.Add(2*time.Hour+time.Minute)) {
		t.Errorf("started %v finished %v", merged.Started, merged.Finished)
	}
}

// TestMergeMerged merges a merged file again, which keeps one source per
// file.
func TestMergeMerged(t *testing.T) {
	files, inputs := mergeFixture(t)
	merged := mergeResults(files, inputs, nil)
	again := mergeResults([]string{"m.json", files[1]}, []*results{merged, inputs[1]}, nil)
	if len(again.Sources) != 2 || again.Sources[0].File != files[0] || again.Sources[1].File != files[1] || len(again.Runs) != 5 {
		t.Errorf("merged again: sources %+v, %d runs", again.Sources, len(again.Runs))
	}
}

func TestMergeMarkdown(t *testing.T) {
	files, inputs := mergeFixture(t)
	a, b := files[0], files[1]
	// Through a file, as a merge writes its results.
	out := benchFile(t, t.TempDir(), "m.json", mergeResults(files, inputs, []string{"-merge", a + "," + b, "-out", "m.json"}))
	merged, err := readResults(out)
	if err != nil {
		t.Fatal(err)
	}
	md := markdown(merged)
	for _, want := range []string{
		"- Machine: cpu A, 2 cores",
		"- Settings differ between the sources",
		"- Commands, merged by `go run ./test/bench -merge " + a + "," + b + " -out m.json`:\n",
		"  - `go run ./test/bench -n 100,300 -operators stock,echo,floor -idle 2m` (`" + a + "`, started 2026-01-01 00:00 UTC): runs echo, stock, floor at N=100; stock at N=300; baseline 60s, idle 120s (after 15s settling), 32 client workers\n",
		"  - `go run ./test/bench -n 300 -operators echo -idle 20s -baseline 5s` (`" + b + "`, started 2026-01-01 02:00 UTC): runs echo at N=300; baseline 5s, idle 20s (after 15s settling), 32 client workers; machine: cpu B",
		"## N = 100\n\nSettings of these runs",
		"- echo, stock, floor: baseline 60s, idle 120s",
		"## N = 300\n\nSettings of these runs",
		"- echo: baseline 5s, idle 20s (after 15s settling), 32 client workers; machine: cpu B, 2 cores, 0.0 GiB, Linux , ; echo-operator v2",
		"- stock: baseline 60s, idle 120s",
		// Each run's idle figures are its own, over its own minutes.
		"| System | min 1 | min 2 | mean | baseline | net mean | operator / client |",
		"| echo | 84 | – | 84 | 10 | 74 | 0 |",
		"| stock | 1000 | 1200 | 1100 | 10 | 1090 | 0 |",
		"| echo | 50 | 52 | 51 | 10 | 41 | 0 |",
		"| 100 | – | – | – | – | 9.76 | – |",
		"| 300 | – | – | – | – | 14.73 | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	if i, j := strings.Index(md, "## N = 100"), strings.Index(md, "## N = 300"); i < 0 || j < i {
		t.Errorf("N sections out of order:\n%s", md)
	}
}

func TestParseMergeFlags(t *testing.T) {
	o, err := parseFlags([]string{"-merge", "a.json, b.json", "-out", "m.json", "-markdown", "m.md"})
	if err != nil || !reflect.DeepEqual(o.merge, []string{"a.json", "b.json"}) || o.out != "m.json" || o.markdown != "m.md" {
		t.Errorf("got %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"-merge", "a.json"},
		{"-merge", "a.json", "-n", "300", "-out", "m.json"},
		{"-merge", "a.json", "b.json", "-out", "m.json"},
		{"-merge", ",", "-out", "m.json"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
