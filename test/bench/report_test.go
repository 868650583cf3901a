//go:build linux

package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestDiffReleases(t *testing.T) {
	before := map[string]releaseSecret{
		"sh.helm.release.v1.a.v1": {"1", "deployed", "10", ""},
		"sh.helm.release.v1.b.v1": {"1", "deployed", "11", ""},
		"sh.helm.release.v1.c.v1": {"1", "deployed", "12", ""},
	}
	if got := diffReleases(before, before); len(got) != 0 {
		t.Errorf("no change reported as %v", got)
	}
	after := map[string]releaseSecret{
		"sh.helm.release.v1.a.v1": {"1", "superseded", "20", ""},
		"sh.helm.release.v1.a.v2": {"2", "deployed", "21", ""},
		"sh.helm.release.v1.c.v1": {"1", "deployed", "12", ""},
	}
	want := []string{
		"added sh.helm.release.v1.a.v2",
		"changed sh.helm.release.v1.a.v1: version 1 status deployed rv 10 -> version 1 status superseded rv 20",
		"removed sh.helm.release.v1.b.v1",
	}
	if got := diffReleases(before, after); !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestMarkdown(t *testing.T) {
	res := &results{
		Args:     []string{"-n", "10"},
		Settings: settings{N: []int{10}},
		Runs: []*runResult{
			{System: systemEcho, N: 10,
				Rollout: &convergence{Want: 10, Reached: 10, AllSeconds: 5, P50Seconds: 2, P99Seconds: 4},
				RolloutRequests: &requestWindow{Net: 500, Top: []requestRow{{Request: "LIST core/secrets", Net: 30}},
					ClientKinds: []requestRow{{Request: "POST apps/deployments", Net: 10}, {Request: "APPLY echo.dev/echoes/status", Net: 25}}},
				UpdateRequests: &requestWindow{ClientKinds: []requestRow{{Request: "PUT core/secrets", Net: 20}, {Request: "APPLY echo.dev/echoes/status", Net: 15}}},
				Idle:           &idleResult{Minutes: []float64{40, 42}, Mean: 41, NetMean: 20, BaselinePerMinute: 21},
				Process:        &processResult{Total: usage{HWMBytes: 100 * mib}},
			},
			{System: systemStock, N: 10,
				Rollout:         &convergence{Want: 10, Reached: 10, AllSeconds: 10, P50Seconds: 4, P99Seconds: 8},
				RolloutRequests: &requestWindow{Net: 900, Top: []requestRow{{Request: "LIST core/secrets", Net: 60}, {Request: "GET apps/deployments", Net: 10}}},
				Idle:            &idleResult{Minutes: []float64{200, 210}, Mean: 205, NetMean: 184, BaselinePerMinute: 21},
				Process:         &processResult{Total: usage{HWMBytes: 250 * mib}},
			},
			{System: systemFloor, N: 10, TimedOutPhase: "rollout", Error: "rollout: context deadline exceeded",
				Rollout: &convergence{Want: 10, Reached: 7, TimedOut: true, AllSeconds: 2.5, P99Seconds: 2}},
		},
	}
	md := markdown(res)
	for _, want := range []string{
		"## N = 10",
		"| Status | ok | ok | timed out in rollout (7/10) |  |  |",
		"| Rollout: first create → all Available (s) | 5.00 | 10.00 | – | 0.50 | – |",
		"| Operator peak RSS (MiB) | 100.0 | 250.0 | – | 0.40 | – |",
		"| echo | 40 | 42 | 41 | 21 | 20 | 0 |",
		"| `LIST core/secrets` | 30 | 60 | – |",
		"| `GET apps/deployments` | · | 10 | – |",
		"| 10 | 0.50 | – | 0.50 | – | 9.20 | 2.50 |",
		"`go run ./test/bench -n 10`",
		"| Request | rollout | per Echo | update | per Echo |",
		"| `APPLY echo.dev/echoes/status` | 25 | 2.50 | 15 | 1.50 |",
		"| `PUT core/secrets` | · | · | 20 | 2.00 |",
		"| all | 35 | 3.50 | 35 | 3.50 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
}
