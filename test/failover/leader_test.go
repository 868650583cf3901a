//go:build linux

package failover

import (
	"context"
	"fmt"
	"math"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Two replicas with leader election and the product's default lease
// settings; the leader is SIGKILLed at 40% of a rollout of N Echos (30;
// 300 with CHAOS_FULL=1). The standby, which must not have reconciled
// anything while it waited, takes the Lease over and every Echo converges,
// with its release deployed and nothing pending. The takeover time is
// logged, not asserted: BenchmarkLeaderTakeover measures it.
func TestLeaderFailover(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	first := startManager(t, "replica-a")
	waitLeadership(t, first)
	second := startManager(t, "replica-b")
	leader, lease := waitLeadership(t, first, second)
	standby := first
	if leader == first {
		standby = second
	}
	t.Logf("leader %s (pid %d, %s), standby %s (pid %d)",
		leader.name, leader.pid(), holder(lease), standby.name, standby.pid())

	ns := newRestrictedNamespace(t)
	n := rolloutSize()
	begin := time.Now()
	names := createEchos(t, ns, n)

	var readyAtKill int
	g.Expect(wait.PollUntilContextTimeout(ctx, interval, rolloutTimeout(), true, func(ctx context.Context) (bool, error) {
		if !leader.running() {
			return false, fmt.Errorf("the leader %s exited", leader.name)
		}
		ready, err := countReady(ctx, ns)
		if err != nil {
			return false, err
		}
		readyAtKill = ready
		return ready >= int(math.Ceil(0.4*float64(n))), nil
	})).To(Succeed())
	g.Expect(readyAtKill).To(BeNumerically("<", n), "the rollout converged before the kill")

	tk := killLeader(t, leader, standby, lease)
	t.Logf("killed the leader %s at %d/%d Echos Ready: Lease acquired by %s after %s, its first reconcile after %s",
		leader.name, readyAtKill, n, standby.name, tk.acquired.Round(time.Millisecond), tk.firstReconcile.Round(time.Millisecond))

	g.Eventually(func(g Gomega) {
		expectAllReady(g, ns, names)
		expectReleasesSettled(g, ns, names)
	}).WithTimeout(rolloutTimeout()).WithPolling(interval).Should(Succeed())
	t.Logf("rollout of %d Echos converged %s after the first create", n, time.Since(begin).Round(time.Millisecond))
	g.Expect(standby.running()).To(BeTrue(), "the new leader exited")
	g.Expect(syscall.Kill(standby.pid(), 0)).To(Succeed())
	g.Expect(standby.isLeader(ctx)).To(BeTrue())
}

// BenchmarkLeaderTakeover measures how long a standby replica takes to
// lead after the leader's SIGKILL, with the product's default lease
// settings and 10 Ready Echos to reconcile. Each iteration starts a new
// standby (but the first), waits until it is ready (informers synced),
// kills the leader and waits for the takeover. Reported:
//   - takeover-min-s, takeover-s (median), takeover-max-s: kill → the
//     Lease's acquireTime, as the new leader wrote it;
//   - first-reconcile-s (median), first-reconcile-max-s: kill → the new
//     leader's reconcile counter first seen above zero (polled every
//     100ms);
//   - leader-idle-req/min, standby-idle-req/min: the requests each replica
//     sent kube-apiserver over 30 s with nothing to reconcile, before the
//     first kill.
//
// Run it with `make bench-failover`, or
// `go test -run '^$' -bench LeaderTakeover -benchtime 5x ./test/failover`.
func BenchmarkLeaderTakeover(b *testing.B) {
	g := NewWithT(b)
	leader := startManager(b, "bench-0")
	waitLeadership(b, leader)
	ns := newRestrictedNamespace(b)
	names := createEchos(b, ns, 10)
	g.Eventually(func(g Gomega) { expectAllReady(g, ns, names) }).
		WithTimeout(rolloutTimeout()).WithPolling(interval).Should(Succeed())

	// Idle, with a standby: what leader election costs in requests.
	standby := startManager(b, "bench-1")
	leader, lease := waitLeadership(b, leader, standby)
	leaderRate, standbyRate := idleRequestRates(b, leader, standby, 30*time.Second)

	var acquired, reconciled []time.Duration
	b.ResetTimer()
	for i := range b.N {
		if i > 0 {
			standby = startManager(b, fmt.Sprintf("bench-%d", i+1))
			leader, lease = waitLeadership(b, leader, standby)
		}
		g.Expect(leader.name).NotTo(Equal(standby.name), "the new replica took the Lease from a live leader")
		tk := killLeader(b, leader, standby, lease)
		b.Logf("takeover %d: Lease acquired after %s, first reconcile after %s",
			i+1, tk.acquired.Round(time.Millisecond), tk.firstReconcile.Round(time.Millisecond))
		acquired = append(acquired, tk.acquired)
		reconciled = append(reconciled, tk.firstReconcile)
		leader = standby
	}
	b.StopTimer()
	lo, median, hi := durations(acquired)
	_, firstMedian, firstMax := durations(reconciled)
	b.ReportMetric(lo.Seconds(), "takeover-min-s")
	b.ReportMetric(median.Seconds(), "takeover-s")
	b.ReportMetric(hi.Seconds(), "takeover-max-s")
	b.ReportMetric(firstMedian.Seconds(), "first-reconcile-s")
	b.ReportMetric(firstMax.Seconds(), "first-reconcile-max-s")
	b.ReportMetric(leaderRate, "leader-idle-req/min")
	b.ReportMetric(standbyRate, "standby-idle-req/min")
	b.ReportMetric(0, "ns/op")
}

// idleRequestRates measures, over window, the requests per minute the
// leader and the standby send while there is nothing to reconcile.
func idleRequestRates(tb testing.TB, leader, standby *manager, window time.Duration) (leaderRate, standbyRate float64) {
	tb.Helper()
	g := NewWithT(tb)
	ctx := context.Background()
	l0, err := leader.requests(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	s0, err := standby.requests(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	<-time.After(window) // a rate over a fixed window: nothing to await
	l1, err := leader.requests(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	s1, err := standby.requests(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	perMinute := time.Minute.Seconds() / window.Seconds()
	return (l1 - l0) * perMinute, (s1 - s0) * perMinute
}
