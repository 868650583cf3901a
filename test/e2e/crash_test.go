//go:build linux

package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// killWhenApplied runs act to start a Helm operation on an Echo's release,
// SIGKILLs the operator the moment the release's Deployment shows the
// operation applied (applied), and reports whether the kill landed inside
// the operation: whether the revision it makes (revision) had no deployed
// record yet. The operator writes that record last, once the objects are
// applied, so a kill there leaves objects the release has no record of.
func killWhenApplied(t *testing.T, key types.NamespacedName, revision int, applied func(*appsv1.Deployment) bool, act func()) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	w, err := clientset.AppsV1().Deployments(key.Namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", key.Name).String(),
	})
	Expect(err).NotTo(HaveOccurred())
	defer w.Stop()

	act()
	killed := false
	for ev := range w.ResultChan() {
		d, ok := ev.Object.(*appsv1.Deployment)
		if !ok || ev.Type == watch.Deleted || !applied(d) {
			continue
		}
		op.kill()
		killed = true
		break
	}
	Expect(killed).To(BeTrue(), "the release's Deployment never showed the operation applied")

	status := recordStatus(t, key, revision)
	t.Logf("killed the operator once %s's Deployment was applied: revision %d %s", key, revision, status)
	Expect(op.start()).To(Succeed())
	return status != string(release.StatusDeployed)
}

// recordStatus is the status of a revision's release record; "no record"
// when there is none.
func recordStatus(t *testing.T, key types.NamespacedName, revision int) string {
	t.Helper()
	secrets, err := clientset.CoreV1().Secrets(key.Namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(chart.ReleaseRecordLabels(chart.ReleaseName(key.Name))).String(),
	})
	Expect(err).NotTo(HaveOccurred())
	for _, s := range secrets.Items {
		if s.Labels[chart.ReleaseVersionLabel] == strconv.Itoa(revision) {
			return s.Labels[chart.ReleaseStatusLabel]
		}
	}
	return "no record"
}

// deploymentSays reports whether a Deployment's echo server answers with
// message.
func deploymentSays(message string) func(*appsv1.Deployment) bool {
	return func(d *appsv1.Deployment) bool {
		for _, c := range d.Spec.Template.Spec.Containers {
			for _, e := range c.Env {
				if e.Name == "ECHO_MESSAGE" && e.Value == message {
					return true
				}
			}
		}
		return false
	}
}

// exists is true of any Deployment.
func exists(*appsv1.Deployment) bool { return true }

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
// pending-upgrade for good when they die mid-operation. This operator
// writes no pending record: killed once an install or upgrade applied its
// objects and before its deployed record, it leaves objects without a
// record. Here it is SIGKILLed there inside real installs and upgrades,
// restarted, and must converge. Each kind of kill is tried on fresh Echos
// until one lands inside the operation (it takes a few milliseconds).
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
			landed = killWhenApplied(t, key, 1, exists, func() {
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
			landed = killWhenApplied(t, key, 2, deploymentSays("upgraded"), func() {
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
