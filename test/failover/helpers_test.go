//go:build linux

package failover

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// newRestrictedNamespace creates a namespace that enforces the restricted
// Pod Security Standard, so every pod the operator makes must comply.
func newRestrictedNamespace(tb testing.TB) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "failover-",
		Labels:       map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		tb.Fatal(err)
	}
	return ns.Name
}

// echoNames names n Echos.
func echoNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("echo-%03d", i)
	}
	return names
}

func createEcho(ctx context.Context, ns, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       echov1alpha1.EchoSpec{Message: "failover"},
	})
}

// createEchos creates n Echos of one replica in ns at once, from 8
// workers, and returns their names.
func createEchos(tb testing.TB, ns string, n int) []string {
	tb.Helper()
	names := echoNames(n)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan string)
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range next {
				if err := createEcho(context.Background(), ns, name); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("creating Echo %s/%s: %w", ns, name, err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, name := range names {
		next <- name
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		tb.Fatal(errs)
	}
	return names
}

// createEchosSteadily creates the named Echos in order, one every period,
// from a goroutine, as users keep doing whatever the control plane goes
// through: each create is retried until it succeeds (an AlreadyExists
// means an attempt that failed went through) or timeout passes. The
// channel yields nil once every Echo exists, or the error that stopped it.
func createEchosSteadily(ctx context.Context, ns string, names []string, period, timeout time.Duration) <-chan error {
	errc := make(chan error, 1)
	go func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for i, name := range names {
			if i > 0 {
				select {
				case <-ctx.Done():
					errc <- ctx.Err()
					return
				case <-tick.C:
				}
			}
			last := "none"
			if err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
				err := createEcho(ctx, ns, name)
				if err == nil || apierrors.IsAlreadyExists(err) {
					return true, nil
				}
				last = err.Error()
				return false, nil
			}); err != nil {
				errc <- fmt.Errorf("creating Echo %s/%s: %w (last error: %s)", ns, name, err, last)
				return
			}
		}
		errc <- nil
	}()
	return errc
}

// echoReady is the test/e2e waitReady condition: Ready for the Echo's
// current generation.
func echoReady(e *echov1alpha1.Echo) bool {
	c := meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && e.Status.ObservedGeneration == e.Generation
}

// countReady counts the Echos of ns that are Ready for their generation.
func countReady(ctx context.Context, ns string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list := &echov1alpha1.EchoList{}
	if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	ready := 0
	for i := range list.Items {
		if echoReady(&list.Items[i]) {
			ready++
		}
	}
	return ready, nil
}

// expectAllReady checks that every named Echo is Ready for its generation.
func expectAllReady(g Gomega, ns string, names []string) {
	list := &echov1alpha1.EchoList{}
	g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(len(names)))
	for i := range list.Items {
		e := &list.Items[i]
		c := meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionReady)
		g.Expect(c).NotTo(BeNil(), "Echo %s has no Ready condition", e.Name)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "Echo %s: %s: %s", e.Name, c.Reason, c.Message)
		g.Expect(e.Status.ObservedGeneration).To(Equal(e.Generation), "Echo %s", e.Name)
		g.Expect(e.Status.ReadyReplicas).To(Equal(int32(1)), "Echo %s", e.Name)
	}
}

// expectReleasesSettled checks the stored release history of every named
// Echo: there is one, none of its records is pending, and the latest is
// deployed.
func expectReleasesSettled(g Gomega, ns string, names []string) {
	secrets := &corev1.SecretList{}
	g.Expect(k8sClient.List(context.Background(), secrets, client.InNamespace(ns),
		client.MatchingLabelsSelector{Selector: chart.ReleaseRecordSelector()})).To(Succeed())
	latest := map[string]corev1.Secret{}
	for _, s := range secrets.Items {
		g.Expect(s.Labels[chart.ReleaseStatusLabel]).NotTo(HavePrefix("pending"), "release record %s", s.Name)
		release := s.Labels[chart.ReleaseNameLabel]
		if prev, ok := latest[release]; !ok || version(s) > version(prev) {
			latest[release] = s
		}
	}
	for _, name := range names {
		s, ok := latest[chart.ReleaseName(name)]
		g.Expect(ok).To(BeTrue(), "Echo %s has no release record", name)
		g.Expect(s.Labels[chart.ReleaseStatusLabel]).To(Equal("deployed"), "latest release record %s", s.Name)
	}
}

func version(s corev1.Secret) int {
	v, _ := strconv.Atoi(s.Labels[chart.ReleaseVersionLabel])
	return v
}

// getLease reads the manager's leader election Lease.
func getLease(ctx context.Context) (*coordinationv1.Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return clientset.CoordinationV1().Leases(operatorNamespace).Get(ctx, leaseName, metav1.GetOptions{})
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitLeadership waits until exactly one of the replicas reports holding
// the Lease, the Lease names a holder, and every replica is ready (its
// informers synced). It returns the leader and the Lease.
func waitLeadership(tb testing.TB, replicas ...*manager) (*manager, *coordinationv1.Lease) {
	tb.Helper()
	var (
		leader *manager
		lease  *coordinationv1.Lease
	)
	NewWithT(tb).Eventually(func(g Gomega) {
		leader = nil
		for _, m := range replicas {
			g.Expect(m.running()).To(BeTrue(), "manager %s exited", m.name)
			g.Expect(m.ready(context.Background())).To(Succeed(), "manager %s", m.name)
			is, err := m.isLeader(context.Background())
			g.Expect(err).NotTo(HaveOccurred())
			if is {
				g.Expect(leader).To(BeNil(), "two replicas claim the Lease")
				leader = m
			}
		}
		g.Expect(leader).NotTo(BeNil(), "no replica holds the Lease")
		var err error
		lease, err = getLease(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(holder(lease)).NotTo(BeEmpty())
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	return leader, lease
}

// takeover is how long a standby took to lead after the leader's SIGKILL.
type takeover struct {
	// acquired: kill → the Lease's acquireTime, as the new leader wrote it
	// (same host, same clock).
	acquired time.Duration
	// firstReconcile: kill → the new leader's reconcile counter first seen
	// above zero, polled every 100ms.
	firstReconcile time.Duration
}

// killLeader SIGKILLs the leader and measures the standby's takeover. The
// standby must not have reconciled anything before.
func killLeader(tb testing.TB, leader, standby *manager, lease *coordinationv1.Lease) takeover {
	tb.Helper()
	g := NewWithT(tb)
	ctx := context.Background()
	before, err := standby.reconciles(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before).To(BeZero(), "the standby %s reconciled while not leading", standby.name)

	killedAt := time.Now()
	leader.kill()
	var tk takeover
	g.Eventually(func(g Gomega) {
		if tk.firstReconcile == 0 {
			n, err := standby.reconciles(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(n).To(BeNumerically(">", 0), "the standby has not reconciled yet")
			tk.firstReconcile = time.Since(killedAt)
		}
		l, err := getLease(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(holder(l)).NotTo(Equal(holder(lease)), "the killed leader still holds the Lease")
		g.Expect(l.Spec.LeaseTransitions).To(HaveValue(BeNumerically(">", ptrValue(lease.Spec.LeaseTransitions))))
		g.Expect(l.Spec.AcquireTime).NotTo(BeNil())
		is, err := standby.isLeader(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(is).To(BeTrue(), "the standby does not report holding the Lease")
		tk.acquired = l.Spec.AcquireTime.Sub(killedAt)
	}).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(tk.acquired).To(BeNumerically(">", 0), "the Lease was acquired before the kill")
	return tk
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// probeLog is what probeAPI saw: when a read of the Lease succeeded, and
// the renewTimes the holder first seen wrote.
type probeLog struct {
	ok       []time.Time
	renewals []time.Time
}

// probeAPI reads the Lease every 100ms (each read bounded to 1s, so that
// client-go's retries cannot hide an outage) until stop is closed. The
// read goes through kube-apiserver to etcd.
func probeAPI(stop <-chan struct{}) func() probeLog {
	var (
		log  probeLog
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		first := ""
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			l, err := clientset.CoordinationV1().Leases(operatorNamespace).Get(ctx, leaseName, metav1.GetOptions{})
			cancel()
			if err != nil {
				continue
			}
			log.ok = append(log.ok, time.Now())
			if l.Spec.RenewTime == nil {
				continue
			}
			if first == "" {
				first = holder(l)
			}
			t := l.Spec.RenewTime.Time
			if holder(l) == first && (len(log.renewals) == 0 || t.After(log.renewals[len(log.renewals)-1])) {
				log.renewals = append(log.renewals, t)
			}
		}
	}()
	return func() probeLog {
		<-done
		return log
	}
}

// longestGap is the longest time between two consecutive times of ts that
// overlaps [from, to].
func longestGap(ts []time.Time, from, to time.Time) time.Duration {
	var longest time.Duration
	for i := 1; i < len(ts); i++ {
		if ts[i].Before(from) || ts[i-1].After(to) {
			continue
		}
		longest = max(longest, ts[i].Sub(ts[i-1]))
	}
	return longest
}

// durations summarises measurements: min, median, max.
func durations(ds []time.Duration) (lo, median, hi time.Duration) {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[0], s[len(s)/2], s[len(s)-1]
}

// countLines counts the lines of a file that contain substr.
func countLines(path, substr string) int {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n := 0
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n
}

// logNotReadyIfFailed logs, when a wait for convergence failed, the
// conditions of every Echo of ns that is not Ready, to tell a stuck
// release from a slow one.
func logNotReadyIfFailed(t *testing.T, waitErr error, ns string) {
	if waitErr == nil {
		return
	}
	list := &echov1alpha1.EchoList{}
	if err := k8sClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Logf("listing Echos: %v", err)
		return
	}
	for i := range list.Items {
		e := &list.Items[i]
		if meta.IsStatusConditionTrue(e.Status.Conditions, echov1alpha1.EchoConditionReady) {
			continue
		}
		var conds []string
		for _, c := range e.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
		}
		t.Logf("Echo %s not Ready, generation %d, observed %d: %s", e.Name, e.Generation, e.Status.ObservedGeneration, strings.Join(conds, "; "))
	}
}
