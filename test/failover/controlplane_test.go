//go:build linux

package failover

import (
	"context"
	"errors"
	"math"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// createPeriod spreads the creation of a rollout's Echos over this long.
const createPeriod = 15 * time.Second

// restart is one control-plane restart during a rollout.
type restart struct {
	comp simcluster.Component
	at   float64 // the fraction of Echos Ready that triggers it
	kill bool    // SIGKILL rather than SIGTERM

	readyBefore int       // Echos Ready when it began
	began       time.Time // signal sent
	stopped     time.Time // the process gone
	serving     time.Time // kube-apiserver's /readyz passed again
	readyAfter  int       // Echos Ready then
	resumed     time.Time // more Echos Ready than readyAfter, first seen
}

// A rollout of N Echos (30; 300 with CHAOS_FULL=1), created steadily over
// 15 s, while kube-apiserver is restarted at 30% of them Ready (SIGTERM:
// it drains, then stops) and etcd at 70% (SIGKILL: requests in flight
// fail, committed or not), each started again on the same port and data.
// One manager runs, with leader election and the product's default lease
// settings. Every Echo must become Ready for its generation with its
// release deployed and nothing pending, and the manager must live through
// it all: same process, still leading, the Lease never changing hands.
func TestControlPlaneRestartsDuringRollout(t *testing.T) {
	// Only in the full run (make test-chaos): on a loaded machine the
	// simulated cluster itself sometimes leaves a pod of a Deployment
	// pending for good after etcd's SIGKILL (its Echo Deployed, the
	// Deployment at 0 of 1 available), which no operator can repair.
	skipUnlessFullRun(t)
	g := NewWithT(t)
	ctx := t.Context()
	m := startManager(t, "restarts")
	_, lease := waitLeadership(t, m)
	pid := m.pid()
	stopProbing := make(chan struct{})
	probes := probeAPI(stopProbing)
	defer func() {
		select {
		case <-stopProbing:
		default:
			close(stopProbing)
		}
	}()

	ns := newRestrictedNamespace(t)
	n := rolloutSize()
	names := echoNames(n)
	begin := time.Now()
	created := createEchosSteadily(ctx, ns, names, createPeriod/time.Duration(n), rolloutTimeout())
	createdAll := false

	restarts := []*restart{
		{comp: simcluster.ComponentAPIServer, at: 0.3},
		{comp: simcluster.ComponentEtcd, at: 0.7, kill: true},
	}
	next := 0
	var converged time.Time
	err := wait.PollUntilContextTimeout(ctx, interval, rolloutTimeout(), true, func(ctx context.Context) (bool, error) {
		if !m.running() {
			return false, errors.New("the manager exited")
		}
		select {
		case err := <-created:
			if err != nil {
				return false, err
			}
			createdAll = true
		default:
		}
		ready, err := countReady(ctx, ns)
		if err != nil {
			return false, nil // the API is still coming back
		}
		now := time.Now()
		for _, r := range restarts[:next] {
			if r.resumed.IsZero() && ready > r.readyAfter {
				r.resumed = now
			}
		}
		if next < len(restarts) {
			r := restarts[next]
			if ready < int(math.Ceil(r.at*float64(n))) {
				return false, nil
			}
			r.readyBefore, r.began = ready, now
			stop := cluster.StopComponent
			if r.kill {
				stop = cluster.KillComponent
			}
			if err := stop(ctx, r.comp); err != nil {
				return false, err
			}
			r.stopped = time.Now()
			if err := cluster.StartComponent(ctx, r.comp); err != nil {
				return false, err
			}
			r.serving = time.Now()
			if r.readyAfter, err = countReady(ctx, ns); err != nil {
				r.readyAfter = r.readyBefore
			}
			next++
			return false, nil
		}
		if createdAll && ready == n {
			converged = now
			return true, nil
		}
		return false, nil
	})
	close(stopProbing)
	seen := probes()
	for _, r := range restarts[:next] {
		how := "SIGTERM"
		if r.kill {
			how = "SIGKILL"
		}
		t.Logf("%s restarted at %d/%d Echos Ready: %s→exited %s, exited→/readyz %s, /readyz→next Echo Ready %s; "+
			"longest without a successful read %s; Lease renewals (attempt starts) %s apart",
			r.comp, r.readyBefore, n, how, r.stopped.Sub(r.began).Round(time.Millisecond),
			r.serving.Sub(r.stopped).Round(time.Millisecond), since(r.serving, r.resumed),
			longestGap(seen.ok, r.began, r.serving).Round(time.Millisecond),
			longestGap(seen.renewals, r.began, r.serving).Round(time.Millisecond))
	}
	logNotReadyIfFailed(t, err, ns)
	g.Expect(err).NotTo(HaveOccurred(), "the rollout did not converge: %d of %d restarts done", next, len(restarts))
	last := restarts[len(restarts)-1]
	t.Logf("rollout of %d Echos converged %s after the first create, %s after the last restart's /readyz; %d failed lease renewal attempts logged",
		n, converged.Sub(begin).Round(time.Millisecond), converged.Sub(last.serving).Round(time.Millisecond),
		countLines(m.logPath, "Failed to update lease"))
	for _, r := range restarts {
		g.Expect(r.readyBefore).To(BeNumerically("<", n), "%s was restarted only after the rollout had converged", r.comp)
	}

	g.Eventually(func(g Gomega) {
		expectAllReady(g, ns, names)
		expectReleasesSettled(g, ns, names)
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())

	// The manager lived through both restarts: the same process, still
	// running, still the leader, and the Lease never changed hands.
	g.Expect(m.running()).To(BeTrue(), "the manager exited")
	g.Expect(m.pid()).To(Equal(pid))
	g.Expect(syscall.Kill(pid, 0)).To(Succeed(), "the manager's process is gone")
	g.Expect(m.isLeader(ctx)).To(BeTrue(), "the manager no longer reports holding the Lease")
	now, err := getLease(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(holder(now)).To(Equal(holder(lease)), "the Lease changed hands")
	g.Expect(ptrValue(now.Spec.LeaseTransitions)).To(Equal(ptrValue(lease.Spec.LeaseTransitions)))
}

// since formats end-start, or "never" if end is unset.
func since(start, end time.Time) string {
	if end.IsZero() {
		return "never"
	}
	return end.Sub(start).Round(time.Millisecond).String()
}
