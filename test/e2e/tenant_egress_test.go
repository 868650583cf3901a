//go:build linux

package e2e

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// A tenant points EchoBackupLocations at what its own pods cannot reach
// but the operator's could, and lists them through the live API: every
// listing fails with the rule of the egress policy that refused it, and
// nothing is sent. The suite's manager allows storageHost alone and denies
// the simulated cluster's networks (operator_test.go).
//
// The manager refuses an address in its dialer's Control hook, before its
// socket connects. The addresses off loopback are tried only once a
// loopback address has been refused and its server has seen nothing, so
// that a policy that lets connections through fails the test on loopback
// first.

// countingServer is an HTTP server on a loopback address that counts the
// requests it gets.
type countingServer struct {
	*httptest.Server
	requests atomic.Int32
}

func newCountingServer(t *testing.T, host string) *countingServer {
	t.Helper()
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	Expect(err).NotTo(HaveOccurred())
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.requests.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	s.Listener = l
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) port() string {
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	Expect(err).NotTo(HaveOccurred())
	return port
}

// refusal is the message of a listing the policy refused.
func refusal(ns, location, addr, rule string) string {
	return "EchoBackupLocation " + ns + "/" + location + ": the operator does not connect to " + addr + ": " + rule +
		" (allow it with --storage-egress-allow)"
}

func TestHostileTenantStorageEndpointsReachOnlyWhatThePolicyAllows(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	installUserRoles(t)
	registerLiveAPI(t)

	// Another team's location, on the S3 server the policy allows.
	s3 := s3server.StartAt(t, storageHost, "echo-backups")
	otherNS := newRestrictedNamespace(t)
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(otherNS))).To(Succeed())
	storage := s3.Storage("echo-backups", "other")
	Expect(k8sClient.Create(ctx, &echov1alpha1.EchoBackupLocation{
		ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: "offsite"},
		Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *storage.S3},
	})).To(Succeed())
	otherTeam := &docsKubectl{ns: otherNS, values: map[string]string{"LOCATION": "offsite"}}
	expectListed := func() {
		out := otherTeam.run(Default, documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION"))
		Expect(out).To(ContainSubstring("No resources found"))
	}
	expectListed()
	// A Service of the other team, whose cluster IP is in the Service
	// range.
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: otherNS, Name: "internal"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 9000}}},
	}
	Expect(k8sClient.Create(ctx, svc)).To(Succeed())
	Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())

	tn := newTenant(t)
	Expect(tn.c.Create(ctx, s3.CredentialsSecret(tn.ns))).To(Succeed())
	tenantKubectl := &docsKubectl{ns: tn.ns, values: map[string]string{}}
	// point creates a location of the tenant at endpoint and waits until
	// listing it fails with want.
	point := func(t *testing.T, name, endpoint, want string) {
		t.Helper()
		loc := storage.S3.DeepCopy()
		loc.Endpoint = endpoint
		Expect(tn.c.Create(ctx, &echov1alpha1.EchoBackupLocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: tn.ns, Name: name},
			Spec:       echov1alpha1.EchoBackupLocationSpec{S3: *loc},
		})).To(Succeed(), "the tenant may create locations")
		tenantKubectl.values["LOCATION"] = name
		Eventually(func(g Gomega) {
			out, err := tenantKubectl.output(documented("get", "storedbackups", "-l", "live.echo.dev/location=LOCATION"))
			g.Expect(err).To(HaveOccurred(), "%s", out)
			g.Expect(out).To(ContainSubstring("(ServiceUnavailable)"))
			g.Expect(out).To(ContainSubstring(want))
		}, timeout, interval).Should(Succeed())
	}

	loopback := newCountingServer(t, "127.0.0.2")
	local := newCountingServer(t, "127.0.0.1")
	if !t.Run("another loopback address, and a name that resolves to loopback", func(t *testing.T) {
		RegisterTestingT(t)
		point(t, "loopback", loopback.URL, refusal(tn.ns, "loopback", "127.0.0.2", "loopback 127.0.0.0/8"))
		point(t, "localhost", "http://localhost:"+local.port(), refusal(tn.ns, "localhost", "127.0.0.1", "loopback 127.0.0.0/8"))
		Expect(loopback.requests.Load()).To(BeZero(), "the server on 127.0.0.2 got requests")
		Expect(local.requests.Load()).To(BeZero(), "the server on 127.0.0.1 got requests")
	}) {
		t.Fatal("the policy does not refuse loopback: the addresses off loopback are not tried")
	}
	RegisterTestingT(t)

	t.Run("private, cluster, CGNAT, unique local and metadata addresses", func(t *testing.T) {
		RegisterTestingT(t)
		cases := []struct{ name, endpoint, addr, rule string }{
			{"private", "http://10.1.2.3:9000", "10.1.2.3", "private network 10.0.0.0/8"},
			{"service", "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "9000"), svc.Spec.ClusterIP, "cluster network 10.96.0.0/16"},
			{"pod", "http://10.128.0.5:9000", "10.128.0.5", "cluster network 10.128.0.0/9"},
			{"cgnat", "http://100.64.0.1:9000", "100.64.0.1", "CGNAT shared address space 100.64.0.0/10"},
			{"alibaba-metadata", "http://100.100.100.200", "100.100.100.200", "CGNAT shared address space 100.64.0.0/10"},
			{"unique-local", "http://[fd00::1]:9000", "fd00::1", "unique local fc00::/7"},
			{"metadata", "http://169.254.169.254", "169.254.169.254", "link-local 169.254.0.0/16"},
			{"mapped", "http://[::ffff:10.0.0.1]:9000", "10.0.0.1", "private network 10.0.0.0/8"},
		}
		var addrs []string
		for _, c := range cases {
			addrs = append(addrs, c.addr)
		}
		blackhole(t, addrs...)
		for _, c := range cases {
			point(t, c.name, c.endpoint, refusal(tn.ns, c.name, c.addr, c.rule))
		}
	})

	t.Run("the tenant's own client gets the refusal too", func(t *testing.T) {
		RegisterTestingT(t)
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(livev1alpha1.GroupVersion.String())
		list.SetKind("StoredBackupList")
		// A list of one location fails with its refusal; a list of several
		// tells it as a warning of each.
		err := tn.c.List(ctx, list, client.InNamespace(tn.ns), client.MatchingLabels{livev1alpha1.LocationLabel: "metadata"})
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("the operator does not connect to"))
		Expect(err.Error()).To(ContainSubstring("(allow it with --storage-egress-allow)"))
		Expect(err.Error()).NotTo(ContainSubstring(s3.SecretKey))
	})

	// Nothing reached the servers, the manager runs on, and the other team
	// still lists its bucket.
	Expect(loopback.requests.Load() + local.requests.Load()).To(BeZero())
	Expect(op.unexpectedExits()).To(BeEmpty(), "the operator exited")
	expectListed()
}

// blackhole routes each address nowhere on this host for the rest of the
// test: were the policy to let a connection through, the host would drop
// it before a packet left the machine. The addresses off loopback are
// tried only where that holds (as root, as CI runs).
func blackhole(t *testing.T, addrs ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: the addresses off loopback are tried only behind blackhole routes, which need root")
	}
	for _, a := range addrs {
		family, prefix := "-4", a+"/32"
		if net.ParseIP(a).To4() == nil {
			family, prefix = "-6", a+"/128"
		}
		out, err := exec.Command("ip", family, "route", "replace", "blackhole", prefix).CombinedOutput()
		if err != nil && family == "-6" && !ipv6Enabled() {
			continue // no IPv6 here: nothing can be sent to it anyway
		}
		Expect(err).NotTo(HaveOccurred(), "ip route replace blackhole %s: %s", prefix, out)
		t.Cleanup(func() { _ = exec.Command("ip", family, "route", "del", "blackhole", prefix).Run() })
	}
}

// ipv6Enabled says whether this host has IPv6.
func ipv6Enabled() bool {
	_, err := os.Stat("/proc/net/if_inet6")
	return err == nil
}
