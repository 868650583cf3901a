//go:build linux

package main

import (
	"context"
	"sync"
	"time"
)

// Sampling periods: /proc is cheap to read; a scrape of the operator's
// metrics endpoint costs the operator some CPU, so it is rarer.
const (
	procSamplePeriod = 250 * time.Millisecond
	heapSamplePeriod = time.Second
)

// procSample is a process's /proc usage at one moment.
type procSample struct {
	At time.Time
	procUsage
}

// heapSample is the Go heap an operator reports at one moment.
type heapSample struct {
	At           time.Time
	Alloc, Inuse float64
}

// sampler records the usage of one operator process in the background
// until stopped; phases read their slice of it afterwards with window.
type sampler struct {
	mu   sync.Mutex
	proc []procSample
	heap []heapSample

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startSampler samples /proc/<pid> every 250 ms and, when metrics is set,
// the operator's Go heap every second.
func startSampler(ctx context.Context, pid int, metrics *metricsEndpoint) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel}
	s.every(ctx, procSamplePeriod, func(ctx context.Context, now time.Time) {
		if u, err := readProcUsage(pid); err == nil {
			s.mu.Lock()
			s.proc = append(s.proc, procSample{At: now, procUsage: u})
			s.mu.Unlock()
		}
	})
	if metrics != nil {
		s.every(ctx, heapSamplePeriod, func(ctx context.Context, now time.Time) {
			if m, err := metrics.scrape(ctx); err == nil {
				s.mu.Lock()
				s.heap = append(s.heap, heapSample{At: now, Alloc: m.sum(heapAllocMetric, nil), Inuse: m.sum(heapInuseMetric, nil)})
				s.mu.Unlock()
			}
		})
	}
	return s
}

// every runs fn at once and then each period until ctx ends.
func (s *sampler) every(ctx context.Context, period time.Duration, fn func(context.Context, time.Time)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			fn(ctx, time.Now())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// stop ends the sampling and waits for it.
func (s *sampler) stop() {
	s.cancel()
	s.wg.Wait()
}

// usage summarises a process over a window of time.
type usage struct {
	// PeakRSSBytes is the highest RSS sampled in the window; EndRSSBytes
	// the last one.
	PeakRSSBytes uint64 `json:"peakRSSBytes"`
	EndRSSBytes  uint64 `json:"endRSSBytes"`
	// HWMBytes is the kernel's peak RSS of the process at the window's end
	// (VmHWM): it also catches peaks between samples, since the start.
	HWMBytes uint64 `json:"hwmBytes"`
	// CPUSeconds is the user and system time spent in the window.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Go heap: highest and last heap_alloc and heap_inuse scraped.
	PeakHeapAllocBytes float64 `json:"peakHeapAllocBytes"`
	PeakHeapInuseBytes float64 `json:"peakHeapInuseBytes"`
	EndHeapAllocBytes  float64 `json:"endHeapAllocBytes"`
	EndHeapInuseBytes  float64 `json:"endHeapInuseBytes"`
}

// window summarises the samples taken from from to to. The CPU time is the
// difference between the last samples at or before each end.
func (s *sampler) window(from, to time.Time) usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return summarizeUsage(s.proc, s.heap, from, to)
}

// summarizeUsage is window on given samples, in time order.
func summarizeUsage(proc []procSample, heap []heapSample, from, to time.Time) usage {
	var u usage
	var startCPU float64
	haveStart := false
	for _, p := range proc {
		if p.At.After(to) {
			break
		}
		inWindow := p.At.After(from)
		// The CPU time counts from the last sample at or before from, or
		// else from the first one after it.
		if !inWindow || !haveStart {
			startCPU, haveStart = p.CPUSeconds, true
		}
		if inWindow {
			u.PeakRSSBytes = max(u.PeakRSSBytes, p.RSS)
		}
		u.EndRSSBytes, u.HWMBytes = p.RSS, p.HWM
		u.CPUSeconds = p.CPUSeconds - startCPU
	}
	for _, h := range heap {
		if h.At.Before(from) {
			continue
		}
		if h.At.After(to) {
			break
		}
		u.PeakHeapAllocBytes = max(u.PeakHeapAllocBytes, h.Alloc)
		u.PeakHeapInuseBytes = max(u.PeakHeapInuseBytes, h.Inuse)
		u.EndHeapAllocBytes, u.EndHeapInuseBytes = h.Alloc, h.Inuse
	}
	return u
}
