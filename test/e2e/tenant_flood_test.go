//go:build linux

package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/cmd/manager/app"
)

// floodEchoesEnv sets how many Echoes the flooding tenant creates at once:
// make test's default is floodEchoesDefault, make test-flood's thousands.
const (
	floodEchoesEnv     = "E2E_FLOOD_ECHOES"
	floodEchoesDefault = 500
	// floodBytesPerEcho bounds what each Echo of the flood may add to
	// the manager's peak resident memory (a default Echo costs about
	// 130 KiB: docs/benchmarks.md).
	floodBytesPerEcho = 256 << 10
)

// TestHostileTenantFloodsItsNamespace: a tenant creates hundreds (make
// test) or thousands (make test-flood) of Echoes at once. While the
// operator still has most of them to install, a new Echo of another
// namespace is installed within a turn of the queue, not behind the
// backlog, and becomes Ready in its usual time; the manager's memory grows
// by a bounded amount per Echo; and the tenant's namespace deletes.
func TestHostileTenantFloodsItsNamespace(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)
	n := floodEchoes(t)
	tn := newTenant(t)
	precise := resetPeakRSS()
	rssBefore, peakBefore := int(managerRSS()>>10), peakRSS(Default)

	createFlood(t, tn, n)
	installedBefore := chartDeployments(tn.ns)
	neighbour := types.NamespacedName{Namespace: newRestrictedNamespace(t), Name: "neighbour"}
	created := time.Now()
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: neighbour.Namespace, Name: neighbour.Name}})).To(Succeed())
	Eventually(func() int { return chartDeployments(neighbour.Namespace) }, timeout, 20*time.Millisecond).Should(Equal(1))
	installedMeanwhile := chartDeployments(tn.ns) - installedBefore
	waitReady(t, neighbour, 1)
	readyIn := time.Since(created)

	// The whole flood installed, its cost in memory.
	Eventually(func() int { return chartDeployments(tn.ns) }, 10*time.Minute, time.Second).Should(Equal(n), "the flood was not installed")
	floodIn := time.Since(created)

	backlog := n - installedBefore
	grown := peakRSS(Default) - peakBefore
	if precise {
		grown = peakRSS(Default) - rssBefore
	}
	t.Logf("%d Echoes created; %d waiting when the neighbour was created, %d installed before it; the neighbour was Ready in %s, the flood installed in %s; the manager's resident memory grew by %d MiB at most",
		n, backlog, installedMeanwhile, readyIn.Round(100*time.Millisecond), floodIn.Round(time.Second), grown>>10)
	Expect(backlog).To(BeNumerically(">=", n/5), "the operator installed the flood as fast as it was created: the test proves nothing")
	Expect(installedMeanwhile).To(BeNumerically("<", backlog/2), "the neighbour's Echo waited for the flood")
	Expect(readyIn).To(BeNumerically("<", neighbourReadyWithin), "the neighbour's Echo took %s to become Ready", readyIn)
	Expect(grown).To(BeNumerically("<", n*floodBytesPerEcho>>10), "the manager's resident memory grew by %d MiB", grown>>10)

	deleteNamespaceAndWait(tn.ns)
	Expect(op.unexpectedExits()).To(BeEmpty(), "the operator exited")
}

// floodEchoes reads floodEchoesEnv.
func floodEchoes(t *testing.T) int {
	v := os.Getenv(floodEchoesEnv)
	if v == "" {
		return floodEchoesDefault
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 10 {
		t.Fatalf("%s=%q: want a number of Echoes, 10 or more", floodEchoesEnv, v)
	}
	return n
}

// createFlood creates n default Echoes in the tenant's namespace, 32 at a
// time and with no client-side rate limit, as a script would.
func createFlood(t *testing.T, tn tenant, n int) {
	t.Helper()
	c := unthrottled(tn)
	names := make(chan string)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for name := range names {
				if err := c.Create(context.Background(), &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name}}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range n {
		names <- fmt.Sprintf("flood-%05d", i)
	}
	close(names)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// unthrottled is the tenant's client without client-go's rate limit.
func unthrottled(tn tenant) client.Client {
	asUser := impersonating(tenantUser(tn.ns))
	asUser.QPS, asUser.Burst = -1, 0
	c, err := client.New(asUser, client.Options{Scheme: app.NewScheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// chartDeployments counts the Deployments of ns: one per installed Echo.
func chartDeployments(ns string) int {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("DeploymentList"))
	Expect(k8sClient.List(context.Background(), l, client.InNamespace(ns))).To(Succeed())
	return len(l.Items)
}
