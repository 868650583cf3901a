//go:build linux

package chaos

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// book collects the outcomes of the kill runs for the summary.
var book = &resultBook{scenarios: map[string]*scenarioResults{}}

type resultBook struct {
	mu        sync.Mutex
	order     []string
	scenarios map[string]*scenarioResults
	random    []string
}

type scenarioResults struct {
	writes    int
	tried     int
	converged int
	missed    int // kill points not reached: the run converged with fewer writes
	took      []time.Duration
}

func (b *resultBook) of(name string) *scenarioResults {
	s, ok := b.scenarios[name]
	if !ok {
		s = &scenarioResults{}
		b.scenarios[name] = s
		b.order = append(b.order, name)
	}
	return s
}

// recorded notes the writes of a scenario's recording run.
func (b *resultBook) recorded(name string, writes int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.of(name).writes = writes
}

// add notes the outcome of a kill run.
func (b *resultBook) add(name string, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.of(name)
	switch {
	case !o.killed:
		s.missed++
	case o.failed:
		s.tried++
	default:
		s.tried++
		s.converged++
		s.took = append(s.took, o.took)
	}
}

// addRandom notes the summary line of a random-kill run.
func (b *resultBook) addRandom(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.random = append(b.random, line)
}

// percentile is the p-th percentile (nearest rank) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// printSummary prints a line per scenario: kill points tried, converged,
// and the time to converge after the restart.
func printSummary() {
	book.mu.Lock()
	defer book.mu.Unlock()
	mode := "fast"
	if fullRun {
		mode = "full (CHAOS_FULL=1)"
	}
	fmt.Printf("chaos summary, %s run:\n", mode)
	total, converged := 0, 0
	for _, name := range book.order {
		s := book.scenarios[name]
		sort.Slice(s.took, func(i, j int) bool { return s.took[i] < s.took[j] })
		total += s.tried
		converged += s.converged
		fmt.Printf("  %-18s writes %3d  kill points %3d  converged %3d  not reached %2d  converge p50 %5.1fs p99 %5.1fs\n",
			name, s.writes, s.tried, s.converged, s.missed,
			percentile(s.took, 50).Seconds(), percentile(s.took, 99).Seconds())
	}
	fmt.Printf("  %-18s kill points %3d  converged %3d\n", "all scenarios", total, converged)
	for _, line := range book.random {
		fmt.Printf("  %s\n", line)
	}
}
