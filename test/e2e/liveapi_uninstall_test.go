//go:build linux

package e2e

import (
	"context"
	"testing"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/internal/servingcert"
)

// TestUninstallRemovesTheLiveAPIService registers an APIService as the
// operator's leader does (servingcert.Rotator, with the operator's owner),
// pointing at a Service nothing serves, as after an uninstall: a deleted
// namespace then stays Terminating, as docs/live-api.md warns, until the
// owner ClusterRole, which every uninstall deletes, is deleted; then
// kube-controller-manager's garbage collector deletes the APIService and
// the namespace's deletion completes.
func TestUninstallRemovesTheLiveAPIService(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	// A group of its own: the suite's live API stays registered meanwhile.
	const name = "v1alpha1.uninstalled.echo.dev"
	owner := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: servingcert.OwnerClusterRole}}
	Expect(k8sClient.Create(ctx, owner)).To(Succeed())
	certs := newRestrictedNamespace(t)
	r := &servingcert.Rotator{Client: k8sClient, Reader: k8sClient, Namespace: certs, SecretName: "live-api-cert",
		APIService: name, Service: "uninstalled", Owner: servingcert.OwnerClusterRole,
		Lifetimes: servingcert.DefaultLifetimes, Log: testr.New(t)}
	_, err := r.Ensure(ctx)
	Expect(err).NotTo(HaveOccurred())
	apiService := servingcert.EmptyAPIService()
	Expect(k8sClient.Get(ctx, client.ObjectKey{Name: name}, apiService)).To(Succeed())
	Expect(apiService.GetOwnerReferences()).To(ConsistOf(And(HaveField("Kind", "ClusterRole"), HaveField("UID", owner.UID))))
	t.Cleanup(func() {
		if err := k8sClient.Delete(ctx, apiService); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting APIService %s: %v", name, err)
		}
	})

	doomed := newRestrictedNamespace(t)
	Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}})).To(Succeed())
	Eventually(func(g Gomega) {
		ns := &corev1.Namespace{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: doomed}, ns)).To(Succeed())
		g.Expect(ns.Status.Conditions).To(ContainElement(And(
			HaveField("Type", corev1.NamespaceDeletionDiscoveryFailure), HaveField("Status", corev1.ConditionTrue))))
	}, timeout, interval).Should(Succeed(), "an APIService pointing at nothing holds namespace deletion")

	Expect(k8sClient.Delete(ctx, owner)).To(Succeed())
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: name}, servingcert.EmptyAPIService()))
	}, timeout, interval).Should(BeTrue(), "the garbage collector deletes the APIService with its owner")
	Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: doomed}, &corev1.Namespace{}))
	}, timeout, interval).Should(BeTrue(), "the namespace's deletion completes")
	_, err = r.Ensure(ctx)
	Expect(err).To(MatchError(ContainSubstring("does not exist")), "the operator registers nothing while its owner is gone")
	Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Name: name}, servingcert.EmptyAPIService()))).To(BeTrue())
}
