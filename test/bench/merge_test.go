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

// benchFile writes results to a file in dir and returns its path.
func benchFile(t *testing.T, dir, name string, res *results) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := res.writeJSON(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func idleRun(system string, n int, minutes ...float64) *runResult {
	mean := 0.0
	for _, m := range minutes {
		mean += m / float64(len(minutes))
	}
	return &runResult{System: system, N: n, Started: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Seconds: 60,
		Idle: &idleResult{Minutes: minutes, Mean: mean, NetMean: mean - 10, BaselinePerMinute: 10}}
}

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := benchFile(t, dir, "a.json", &results{
		Started: started, Finished: started.Add(time.Hour),
		Args:     []string{"-n", "100,300", "-operators", "stock,echo,floor", "-idle", "2m"},
		Machine:  machineInfo{CPU: "cpu A", Cores: 2},
		Versions: versionInfo{EchoOperator: "v1"},
		Settings: settings{N: []int{100, 300}, Systems: []string{"stock", "echo", "floor"}, BaselineSeconds: 60, IdleSeconds: 120, SettleSeconds: 15, Workers: 32},
		Runs: []*runResult{
			idleRun(systemStock, 100, 400, 420), idleRun(systemEcho, 100, 50, 52), idleRun(systemFloor, 100, 30, 30),
			idleRun(systemStock, 300, 1000, 1200), idleRun(systemEcho, 300, 70, 72),
		},
	})
	b := benchFile(t, dir, "b.json", &results{
		Started:  started.Add(2 * time.Hour),
		Args:     []string{"-n", "300", "-operators", "echo", "-idle", "20s", "-baseline", "5s"},
		Machine:  machineInfo{CPU: "cpu B", Cores: 2},
		Versions: versionInfo{EchoOperator: "v2"},
		Settings: settings{N: []int{300}, Systems: []string{"echo"}, BaselineSeconds: 5, IdleSeconds: 20, SettleSeconds: 15, Workers: 32},
		Runs:     []*runResult{idleRun(systemEcho, 300, 84)},
	})
	var inputs []*results
	for _, p := range []string{a, b} {
		r, err := readResults(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, r)
	}
	args := []string{"-merge", a + "," + b, "-out", "m.json"}
	merged := mergeResults([]string{a, b}, inputs, args)

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
	if !merged.Started.Equal(started) || !merged.Finished.Equal(started.Add(2*time.Hour+time.Minute)) {
		t.Errorf("started %v finished %v", merged.Started, merged.Finished)
	}

	// Through the file, as the report of a merged file would be made.
	out := benchFile(t, dir, "m.json", merged)
	reread, err := readResults(out)
	if err != nil {
		t.Fatal(err)
	}
	md := markdown(reread)
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
		"| 100 | – | – | – | – | 8.39 | – |",
		"| 300 | – | – | – | – | 14.73 | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	if i, j := strings.Index(md, "## N = 100"), strings.Index(md, "## N = 300"); i < 0 || j < i {
		t.Errorf("N sections out of order:\n%s", md)
	}

	// Merging a merged file again keeps one source per file.
	again := mergeResults([]string{out, b}, []*results{reread, inputs[1]}, nil)
	if len(again.Sources) != 2 || again.Sources[0].File != a || again.Sources[1].File != b || len(again.Runs) != 5 {
		t.Errorf("merged again: sources %+v, %d runs", again.Sources, len(again.Runs))
	}
}
