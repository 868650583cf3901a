//go:build linux

package main

import (
	"math"
	"sort"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of values by the
// nearest-rank method: the smallest value with at least p% of the values at
// or below it. It returns 0 for no values.
func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// convergence summarises how a set of objects reached a state: when each
// one's action (create or patch) was sent, and when it first reached it.
type convergence struct {
	// Want is the number of objects; Reached how many got there.
	Want    int `json:"want"`
	Reached int `json:"reached"`
	// TimedOut is set when the phase's time limit passed first.
	TimedOut bool `json:"timedOut,omitempty"`
	// AllSeconds runs from the first action to the last object reaching
	// the state (to the end of the wait when some never did).
	AllSeconds float64 `json:"allSeconds"`
	// P50Seconds, P99Seconds and MaxSeconds are over the objects that
	// reached the state, each measured from its own action.
	P50Seconds float64 `json:"p50Seconds"`
	P99Seconds float64 `json:"p99Seconds"`
	MaxSeconds float64 `json:"maxSeconds"`
}

// summarize builds the convergence of want objects from the times their
// actions were sent and the times they reached the state; end closes
// AllSeconds when some never did. An object whose action was not sent
// counts as not reached.
func summarize(want int, actions, reached map[string]time.Time, end time.Time) *convergence {
	c := &convergence{Want: want}
	var first, last time.Time
	var latencies []float64
	for name, at := range actions {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		done, ok := reached[name]
		if !ok {
			continue
		}
		c.Reached++
		if done.After(last) {
			last = done
		}
		latencies = append(latencies, done.Sub(at).Seconds())
	}
	if c.Reached < c.Want {
		last = end
	}
	if !first.IsZero() {
		c.AllSeconds = last.Sub(first).Seconds()
	}
	c.P50Seconds = percentile(latencies, 50)
	c.P99Seconds = percentile(latencies, 99)
	c.MaxSeconds = percentile(latencies, 100)
	return c
}

// ratio returns a/b, or 0 when either is not positive: a ratio with a
// missing or zero measurement means nothing.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}
