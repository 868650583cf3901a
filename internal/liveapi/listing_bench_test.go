package liveapi

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/fakes3"
)

// BenchmarkHostileListings lists, with `kubectl get storedbackups -A`'s
// request, the locations of tenants whose storage is a fake S3 service
// that answers with endless pages, huge pages, huge manifests or nothing,
// and reports the peak of the Go heap (sampled every millisecond) and of
// the process's resident memory during one list, with the collector
// tuned as the manager tunes it (GOGC=50). The storage that does not
// answer is given up on after 3 s instead of 20, which changes nothing
// of the memory.
//
//	go test ./internal/liveapi -run '^$' -bench HostileListings -benchtime 1x
func BenchmarkHostileListings(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(50))
	srv := fakes3.Start(b)
	srv.Add("endless", fakes3.EndlessPages(1000))
	srv.Add("many-keys", fakes3.HugePage(1<<30))
	srv.Add("bloated", fakes3.BloatedPage(1<<30))
	srv.Add("huge-manifests", fakes3.HugeManifests(500, 256<<20))
	srv.Add("slow", fakes3.Slow())
	limits := defaultListingLimits
	for _, tc := range []struct {
		name       string
		namespaces int
		buckets    []string
	}{
		{"endless pages", 1, []string{"endless"}},
		{"huge pages", 1, []string{"many-keys", "bloated"}},
		{"huge manifests", 1, []string{"huge-manifests"}},
		{"eight tenants with every kind", 8, []string{"endless", "many-keys", "bloated", "huge-manifests", "slow"}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var objects []client.Object
			for n := range tc.namespaces {
				for _, bucket := range tc.buckets {
					objects = append(objects, fakeLocation(srv, "tenant-"+strconv.Itoa(n), bucket, bucket)...)
				}
			}
			var heap, rss, items int
			for b.Loop() {
				s := storedBackupsOf(b, limits, objects...)
				runtime.GC()
				resetPeakRSS(b)
				rssBefore := residentKiB(b, "VmRSS")
				stop := samplePeakHeap()
				ctx, _ := request("")
				list, err := s.List(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				heap = max(heap, stop())
				rss = max(rss, residentKiB(b, "VmHWM")-rssBefore)
				items = len(list.(*livev1alpha1.StoredBackupList).Items)
			}
			b.ReportMetric(float64(heap)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(rss)/(1<<10), "peak-rss-delta-MiB")
			b.ReportMetric(float64(items), "backups")
		})
	}
}

// samplePeakHeap samples the heap's objects every millisecond until the
// function it returns is called, which returns their peak in bytes.
func samplePeakHeap() func() int {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int {
		metrics.Read(sample)
		return int(sample[0].Value.Uint64())
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	peak := read()
	wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				peak = max(peak, read())
			}
		}
	})
	return func() int {
		close(done)
		wg.Wait()
		return max(peak, read())
	}
}

// resetPeakRSS sets the process's peak resident memory (VmHWM) to its
// current one.
func resetPeakRSS(b *testing.B) {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak resident memory: %v", err)
	}
}

// residentKiB reads a field of /proc/self/status in KiB.
func residentKiB(b *testing.B, field string) int {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				b.Fatal(err)
			}
			return kib
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
