//go:build linux

package e2e

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// killWhenReleasePending SIGKILLs the operator the moment the release of an
// Echo is stored in the given pending status, runs act to start the Helm
// operation, and reports whether the release was still pending after the
// kill, that is, whether the kill landed inside the operation.
func killWhenReleasePending(t *testing.T, key types.NamespacedName, status string, act func()) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := clientset.CoreV1().Secrets(key.Namespace).Watch(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(chart.ReleaseRecordLabels(chart.ReleaseName(key.Name))).String(),
	})
	Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	act()
	var pendingSecret string
	for ev := range w.ResultChan() {
		s, ok := ev.Object.(*corev1.Secret)
		if !ok || ev.Type == watch.Deleted || s.Labels[chart.ReleaseStatusLabel] != status {
			continue
		}
		op.kill()
		pendingSecret = s.Name
		break
	}
	Expect(pendingSecret).NotTo(BeEmpty(), "the release never went %s", status)

	s, err := clientset.CoreV1().Secrets(key.Namespace).Get(context.Background(), pendingSecret, metav1.GetOptions{})
	Expect(err).NotTo(HaveOccurred())
	landed := s.Labels[chart.ReleaseStatusLabel] == status
	t.Logf("killed the operator during %s of %s: release %s left %s", status, key, pendingSecret, s.Labels[chart.ReleaseStatusLabel])
	Expect(op.start()).To(Succeed())
	return landed
}

// expectNoPendingRelease checks the stored history of an Echo's release.
func expectNoPendingRelease(g Gomega, key types.NamespacedName) {
	secrets, err := clientset.CoreV1().Secrets(key.Namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(chart.ReleaseRecordLabels(chart.ReleaseName(key.Name))).String(),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets.Items).NotTo(BeEmpty())
	for _, s := range secrets.Items {
		g.Expect(s.Labels[chart.ReleaseStatusLabel]).NotTo(HavePrefix("pending"), "release %s", s.Name)
	}
}

// The stock Helm operators leave a release pending-install or
// pending-upgrade for good when they die mid-operation. Here the operator
// is SIGKILLed inside real installs and upgrades, restarted, and must
// converge. Each kind of kill is tried on fresh Echos until one lands
// inside the operation (it takes a few milliseconds).
func TestOperatorKilledMidOperationConverges(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	ns := newRestrictedNamespace(t)
	const attempts = 8

	var keys []types.NamespacedName
	t.Run("during an install", func(t *testing.T) {
		RegisterTestingT(t)
		landed := false
		for i := 0; i < attempts && !landed; i++ {
			key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("install-%d", i)}
			keys = append(keys, key)
			landed = killWhenReleasePending(t, key, "pending-install", func() {
				Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
			})
			waitReady(t, key, 1)
		}
		Expect(landed).To(BeTrue(), "no kill landed inside an install in %d attempts", attempts)
	})

	t.Run("during an upgrade", func(t *testing.T) {
		RegisterTestingT(t)
		landed := false
		for i := 0; i < attempts && !landed; i++ {
			key := types.NamespacedName{Namespace: ns, Name: fmt.Sprintf("upgrade-%d", i)}
			keys = append(keys, key)
			Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name}})).To(Succeed())
			waitReady(t, key, 1)
			landed = killWhenReleasePending(t, key, "pending-upgrade", func() {
				updateEcho(t, key, func(e *echov1alpha1.Echo) { e.Spec.Message = "upgraded" })
			})
			e := waitReady(t, key, 1)
			Expect(e.Generation).To(BeEquivalentTo(2))
		}
		Expect(landed).To(BeTrue(), "no kill landed inside an upgrade in %d attempts", attempts)
	})

	// The subtests bound the package's Gomega to themselves; a failure
	// from here on is this test's.
	RegisterTestingT(t)
	Eventually(func(g Gomega) {
		for _, key := range keys {
			expectNoPendingRelease(g, key)
		}
	}, timeout, interval).Should(Succeed())
}
