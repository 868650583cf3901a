//go:build linux

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/test/harness/largestecho"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// largestBenchEchoesEnv sets how many Echoes of each size
// BenchmarkLargestEchoes creates.
const largestBenchEchoesEnv = "BENCH_LARGEST_ECHOES"

// echoMemory is what the manager held per Echo of one size, and the bytes
// of one such Echo as the API serves it.
type echoMemory struct {
	rssPerEcho, hwmPerEcho float64
	storedBytes            int
}

// BenchmarkLargestEchoes measures what one Echo at the largest admitted
// size costs the running manager: it creates N Echoes of the default spec
// in one namespace, then N of largestecho.RunnableSpec in another, waits
// until each set's releases are deployed and its Deployments available
// (KWOK runs the pods), and reports the growth of the manager's resident
// memory (VmRSS) and of its peak (VmHWM) per Echo of each size, the bytes of one Echo of each as stored, and the growth
// per KiB of spec between them (make bench-largest; results in
// docs/benchmarks.md). N is BENCH_LARGEST_ECHOES, 200 unless set.
func BenchmarkLargestEchoes(b *testing.B) {
	RegisterTestingT(b)
	n := largestBenchEchoes(b)
	labelNodes(b, largestecho.NodeSelector())
	small := measureEchoes(b, "bench-small", n, map[string]any{})
	large := measureEchoes(b, "bench-largest", n, largestecho.RunnableSpec(simcluster.StorageClassName))
	b.ReportMetric(small.rssPerEcho/1024, "small-rss-KiB/echo")
	b.ReportMetric(small.hwmPerEcho/1024, "small-hwm-KiB/echo")
	b.ReportMetric(float64(small.storedBytes), "small-stored-bytes")
	b.ReportMetric(large.rssPerEcho/1024, "largest-rss-KiB/echo")
	b.ReportMetric(large.hwmPerEcho/1024, "largest-hwm-KiB/echo")
	b.ReportMetric(float64(large.storedBytes), "largest-stored-bytes")
	perKiB := (large.rssPerEcho - small.rssPerEcho) / (float64(large.storedBytes-small.storedBytes) / 1024)
	b.ReportMetric(perKiB/1024, "rss-KiB/KiB-of-spec")
	b.ReportMetric(float64(managerMemory("VmRSS"))/(1<<20), "rss-MiB")
	b.Logf("%d Echoes of each size: a default Echo (%d bytes stored) grew the manager's RSS by %.0f KiB (peak %.0f KiB), "+
		"a largest one (%d bytes) by %.0f KiB (peak %.0f KiB): %.1f KiB of RSS per KiB of spec",
		n, small.storedBytes, small.rssPerEcho/1024, small.hwmPerEcho/1024, large.storedBytes, large.rssPerEcho/1024, large.hwmPerEcho/1024, perKiB/1024)
}

func largestBenchEchoes(b *testing.B) int {
	v := os.Getenv(largestBenchEchoesEnv)
	if v == "" {
		return 200
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive number of Echoes", largestBenchEchoesEnv, v)
	}
	return n
}

// labelNodes gives every node of the cluster labels, so that pods whose
// nodeSelector asks for them are scheduled, and takes them off after.
func labelNodes(b *testing.B, labels map[string]any) {
	patch := func(value func(v any) any) {
		nodes := &corev1.NodeList{}
		Expect(k8sClient.List(context.Background(), nodes)).To(Succeed())
		for i := range nodes.Items {
			ls := map[string]any{}
			for k, v := range labels {
				ls[k] = value(v)
			}
			raw, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": ls}})
			Expect(err).NotTo(HaveOccurred())
			Expect(k8sClient.Patch(context.Background(), &nodes.Items[i], client.RawPatch(client.Merge.Type(), raw))).To(Succeed())
		}
	}
	patch(func(v any) any { return v })
	b.Cleanup(func() { patch(func(any) any { return nil }) })
}

// measureEchoes creates n Echoes of spec in the namespace ns, waits until
// all are deployed with their Deployment available, and returns the manager's memory growth per Echo. The
// namespace is deleted when the benchmark ends.
func measureEchoes(b *testing.B, ns string, n int, spec map[string]any) echoMemory {
	ctx := context.Background()
	Expect(createNamespace(ctx, ns, nil)).To(Succeed())
	b.Cleanup(func() { deleteNamespaceAndWait(ns) })
	rss, hwm := managerMemory("VmRSS"), managerMemory("VmHWM")
	start := time.Now()
	for i := range n {
		Expect(k8sClient.Create(ctx, echoOfSpec(ns, fmt.Sprintf("e-%04d", i), spec))).To(Succeed())
	}
	Eventually(func(g Gomega) []string { return notRunningEchoes(g, ns, n) }, time.Duration(n)*time.Second+timeout, time.Second).Should(BeEmpty())
	b.Logf("%s: %d Echoes deployed and available in %s", ns, n, time.Since(start).Round(time.Second))
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("Echo"))
	Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "e-0000"}, stored)).To(Succeed())
	raw, err := json.Marshal(stored.Object)
	Expect(err).NotTo(HaveOccurred())
	return echoMemory{
		rssPerEcho:  float64(managerMemory("VmRSS")-rss) / float64(n),
		hwmPerEcho:  float64(managerMemory("VmHWM")-hwm) / float64(n),
		storedBytes: len(raw),
	}
}

func echoOfSpec(ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetGroupVersionKind(echov1alpha1.GroupVersion.WithKind("Echo"))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// notRunningEchoes names the Echoes of ns whose release is not deployed
// or whose Deployment is not available, up to five of them; all n must
// exist. Ready is not awaited: a Deployment larger than the cache keeps
// whole (cachetrim.MaxObjectBytes), as the largest Echo's is, reaches the
// manager as a stub without its spec-generation annotation, and the Echo
// stays ReleasePending.
func notRunningEchoes(g Gomega, ns string, n int) []string {
	ctx := context.Background()
	echoes, deployments := &echov1alpha1.EchoList{}, &appsv1.DeploymentList{}
	g.Expect(k8sClient.List(ctx, echoes, client.InNamespace(ns))).To(Succeed())
	g.Expect(k8sClient.List(ctx, deployments, client.InNamespace(ns))).To(Succeed())
	g.Expect(echoes.Items).To(HaveLen(n))
	available := map[string]bool{}
	for _, d := range deployments.Items {
		available[d.Name] = d.Status.AvailableReplicas >= 1
	}
	var out []string
	for _, e := range echoes.Items {
		deployed := meta.IsStatusConditionTrue(e.Status.Conditions, echov1alpha1.EchoConditionDeployed)
		if (!deployed || !available[e.Name]) && len(out) < 5 {
			out = append(out, fmt.Sprintf("%s: deployed %t, Deployment available %t", e.Name, deployed, available[e.Name]))
		}
	}
	return out
}

// deleteNamespaceAndWait deletes ns and waits until it is gone: its Echoes
// uninstalled, their children collected.
func deleteNamespaceAndWait(ns string) {
	obj := &corev1.Namespace{}
	obj.Name = ns
	Expect(client.IgnoreNotFound(k8sClient.Delete(context.Background(), obj))).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(context.Background(), client.ObjectKey{Name: ns}, obj))
	}, 10*time.Minute, time.Second).Should(BeTrue(), "namespace %s still there", ns)
}
