//go:build linux

package olm

import (
	"context"
	"fmt"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/servingcert"
	"github.com/echo-operator/echo-operator/test/harness/s3server"
)

// TestInstallFromCatalog subscribes to the package in the catalog, as a
// user of OLM would, with an OperatorGroup that targets one namespace other
// than the operator's (SingleNamespace): the strictest install mode for the
// CSV's permissions, which OLM grants cluster-wide (clusterPermissions) and
// in the operator's and the target namespaces (permissions). The operator's
// ServiceAccount must be unable to touch a third namespace. Then the manager
// binary runs with the token of that ServiceAccount and takes an Echo
// through a backup and a restore in the target namespace.
func TestInstallFromCatalog(t *testing.T) {
	RegisterTestingT(t)
	ctx := context.Background()
	tc := buildTestCatalog(t, false)
	serveCatalog(t, "echo-operator", tc)

	// otherNS is outside the OperatorGroup: another tenant's namespace.
	const installNS, targetNS, otherNS = "echo-operator", "echo-apps", "echo-other-tenant"
	Expect(createNamespace(ctx, installNS)).To(Succeed())
	Expect(createNamespace(ctx, otherNS)).To(Succeed())
	Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: targetNS,
		// As in the end-to-end tests: every pod the operator makes complies.
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}})).To(Succeed())
	createOperatorGroup(t, installNS, "echo-operator", targetNS)
	// The live API is off unless the Subscription turns it on; on, the
	// operator registers its APIService itself.
	liveAPIOn := map[string]string{"LIVE_API_BIND_ADDRESS": fmt.Sprintf(":%d", liveAPIPort)}
	sub := subscription{namespace: installNS, name: packageName, channel: tc.defaultChannel, source: "echo-operator", env: liveAPIOn}.create(t)

	// The manager runs as the Deployment's pod would, from the moment OLM
	// creates it.
	op := startOperatorAsDeployment(t, waitDeploymentOf(t, installNS, tc.current, liveAPIOn), nil)

	var csv *unstructured.Unstructured
	if !t.Run("OLM installs the CSV", func(t *testing.T) {
		RegisterTestingT(t)
		csv = waitCSVSucceeded(t, installNS, tc.current)
		expectLiveAPIAvailable(t, op, targetNS)
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sub), sub)).To(Succeed())
			installed, _, _ := unstructured.NestedString(sub.Object, "status", "installedCSV")
			state, _, _ := unstructured.NestedString(sub.Object, "status", "state")
			g.Expect(installed).To(Equal(tc.current))
			g.Expect(state).To(Equal("AtLatestKnown"))
		}, timeout, interval).Should(Succeed())

		spec := specOf(csv)
		Expect(spec.APIServiceDefinitions.Owned).To(BeEmpty(), "OLM v1 refuses apiservicedefinitions: the operator registers its APIService itself")
		expectCRDsEstablished(spec)
		expectServiceAccounts(installNS, spec)
		// clusterPermissions hold cluster-wide; permissions in the
		// operator's namespace and in every target namespace.
		expectGranted(installNS, spec.Install.Spec.ClusterPermissions, "")
		expectGranted(installNS, spec.Install.Spec.Permissions, installNS, targetNS)
		for _, p := range spec.Install.Spec.ClusterPermissions {
			Expect(allowed(Default, installNS, p.ServiceAccountName, access{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterroles"}, "")).
				To(BeFalse(), "the operator's account is not an administrator")
		}
		Expect(spec.Install.Spec.Deployments).NotTo(BeEmpty())
		for _, d := range spec.Install.Spec.Deployments {
			dep := &appsv1.Deployment{}
			Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: installNS, Name: d.Name}, dep)).To(Succeed())
			Expect(dep.Labels).To(HaveKeyWithValue(ownerLabel, tc.current))
			Expect(dep.Status.AvailableReplicas).To(BeNumerically(">=", 1), "the CSV succeeds once its Deployment is available")
			expectManagerNetworkPolicy(dep)
		}
		expectNoMonitoringAPIs()
	}) {
		return
	}

	t.Run("the operator's permissions end at its namespaces", func(t *testing.T) {
		RegisterTestingT(t)
		spec := specOf(csv)
		dep := &appsv1.Deployment{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: installNS, Name: spec.Install.Spec.Deployments[0].Name}, dep)).To(Succeed())
		sa := dep.Spec.Template.Spec.ServiceAccountName

		// What the operator needs where it works: Helm's release Secrets,
		// the chart's Deployments and the data mover's Jobs in the target
		// namespace, and Secrets of its own in its namespace.
		expectGranted(installNS, []permission{{ServiceAccountName: sa, Rules: tenantWorkloadRules(false)}}, targetNS)
		expectGranted(installNS, []permission{{ServiceAccountName: sa, Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create"}},
		}}}, installNS)

		// Whatever the CSV says, none of that reaches another namespace
		// nor the whole cluster.
		expectDenied(installNS, sa, tenantWorkloadRules(true), otherNS, "")
		// Nor does any other namespaced rule of the CSV.
		for _, p := range spec.Install.Spec.Permissions {
			expectDenied(installNS, p.ServiceAccountName, p.Rules, otherNS, "")
		}
		// Only cluster-scoped APIs are granted cluster-wide, and one
		// ConfigMap by name.
		for _, p := range spec.Install.Spec.ClusterPermissions {
			for _, a := range accessesOf(p.Rules) {
				Expect(clusterWideAllowed(a)).To(BeTrue(), "clusterPermissions grant %s in every namespace", a)
			}
		}
	})

	t.Run("the CSV's permissions are enough for the operator", func(t *testing.T) {
		RegisterTestingT(t)
		spec := specOf(csv)
		s3 := s3server.Start(t, "echo-backups")
		Expect(spec.Install.Spec.Deployments).NotTo(BeEmpty())
		Expect(op.env).To(HaveKeyWithValue("WATCH_NAMESPACE", targetNS), "OLM sets the target namespaces on the pod")

		exerciseOperator(t, op, s3, targetNS)

		lease := &coordinationv1.Lease{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: installNS, Name: "echo-operator.echo.dev"}, lease)).To(Succeed())
		Expect(lease.Spec.HolderIdentity).NotTo(BeNil(), "the operator holds the leader election Lease")

		Expect(op.stop()).To(Succeed())
		Expect(op.forbidden()).To(BeEmpty(), "the operator lacks permissions; see %s", op.logPath)
	})
}

// expectNoMonitoringAPIs checks that the cluster the bundle installed on
// has no Prometheus Operator: the bundle installs without its CRDs, and
// carries no ServiceMonitor or PrometheusRule (config/prometheus is applied
// by hand where they exist).
func expectNoMonitoringAPIs() {
	for _, name := range []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"} {
		err := k8sClient.Get(context.Background(), client.ObjectKey{Name: name}, newObject("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", name))
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the cluster has no CRD %s (%v): the install proves nothing without the Prometheus Operator", name, err)
	}
}

// clusterWideAllowed reports whether the operator may be granted a
// cluster-wide: the reviews by which its metrics endpoint and live API
// authenticate and authorize callers, creating APIServices and, by name,
// its own, reading kube-apiserver's authentication CAs, a ConfigMap of
// kube-system by name, and reading the ClusterRole that owns the
// APIService, by name. None of it is namespaced but the ConfigMap, so no
// Role can grant it.
func clusterWideAllowed(a access) bool {
	switch a.group + "/" + a.resource {
	case "authentication.k8s.io/tokenreviews", "authorization.k8s.io/subjectaccessreviews":
		return a.verb == "create"
	case "apiregistration.k8s.io/apiservices":
		return a.verb == "create" || a.name == "v1alpha1.live.echo.dev"
	case "/configmaps":
		return a.name == "extension-apiserver-authentication" && slices.Contains([]string{"get", "list", "watch"}, a.verb)
	case "rbac.authorization.k8s.io/clusterroles":
		return a.name == servingcert.OwnerClusterRole && a.verb == "get"
	}
	return false
}

// tenantWorkloadRules are the rules on a tenant's Secrets and workloads
// that matter most: Helm's release Secrets, the chart's Deployments and the
// data mover's Jobs. Without everyVerb, they hold the verbs the operator
// uses; with it, every verb.
func tenantWorkloadRules(everyVerb bool) []rbacv1.PolicyRule {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	jobs := []string{"get", "list", "watch", "create", "delete"}
	if everyVerb {
		jobs = all
	}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: all},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: jobs},
	}
}

// exerciseOperator has the operator handle each of its kinds in namespace
// ns: an Echo becomes Ready, an EchoBackup of it completes (its data mover
// Job run for real, as in the end-to-end tests), an EchoBackupSchedule is
// Ready, and an EchoRestore of the backup creates a new Echo from it and
// completes.
func exerciseOperator(t *testing.T, op *operatorProcess, s3 *s3server.Server, ns string) {
	t.Helper()
	ctx := context.Background()
	Expect(k8sClient.Create(ctx, s3.CredentialsSecret(ns))).To(Succeed())
	storage := s3.Storage("echo-backups", "olm")

	key := types.NamespacedName{Namespace: ns, Name: "journal"}
	Expect(k8sClient.Create(ctx, &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: echov1alpha1.EchoSpec{
			Replicas:    ptr.To[int32](1),
			Persistence: &echov1alpha1.PersistenceSpec{Enabled: true},
		},
	})).To(Succeed())
	waitEchoReady(op, key)

	data := t.TempDir()
	writeJournal(t, data, 5)
	backup := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "journal-1"},
		Spec: echov1alpha1.EchoBackupSpec{EchoName: key.Name, Storage: storage}}
	Expect(k8sClient.Create(ctx, backup)).To(Succeed())
	runMoverForJob(t, waitJob(op, ns, "journal-1-backup"), data, s3)
	Eventually(func(g Gomega) {
		op.expectHealthy()
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(backup), backup)).To(Succeed())
		g.Expect(meta.FindStatusCondition(backup.Status.Conditions, echov1alpha1.BackupConditionFailed)).To(BeNil(), "%s", backup.Status.Error)
		g.Expect(meta.IsStatusConditionTrue(backup.Status.Conditions, echov1alpha1.BackupConditionComplete)).To(BeTrue())
	}, timeout, interval).Should(Succeed())

	schedule := &echov1alpha1.EchoBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "yearly"},
		Spec: echov1alpha1.EchoBackupScheduleSpec{Schedule: "@yearly",
			Template: echov1alpha1.EchoBackupSpec{EchoName: key.Name, Storage: storage}},
	}
	Expect(k8sClient.Create(ctx, schedule)).To(Succeed())
	Eventually(func(g Gomega) {
		op.expectHealthy()
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(schedule), schedule)).To(Succeed())
		c := meta.FindStatusCondition(schedule.Status.Conditions, echov1alpha1.ScheduleConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}, timeout, interval).Should(Succeed(), "EchoBackupSchedule %s is Ready", schedule.Name)

	restore := &echov1alpha1.EchoRestore{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "copy"},
		Spec: echov1alpha1.EchoRestoreSpec{
			Source:   echov1alpha1.RestoreSource{BackupName: backup.Name},
			EchoName: "journal-copy",
		},
	}
	Expect(k8sClient.Create(ctx, restore)).To(Succeed())
	runMoverForJob(t, waitJob(op, ns, "copy-inspect"), "", s3)
	runMoverForJob(t, waitJob(op, ns, "copy-restore"), t.TempDir(), s3)
	waitEchoReady(op, types.NamespacedName{Namespace: ns, Name: "journal-copy"})
	Eventually(func(g Gomega) {
		op.expectHealthy()
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(restore), restore)).To(Succeed())
		g.Expect(meta.FindStatusCondition(restore.Status.Conditions, echov1alpha1.RestoreConditionFailed)).To(BeNil(), "%s", restore.Status.Error)
		g.Expect(meta.IsStatusConditionTrue(restore.Status.Conditions, echov1alpha1.RestoreConditionComplete)).To(BeTrue())
		g.Expect(restore.Status.EchoCreated).To(BeTrue())
	}, timeout, interval).Should(Succeed())
}

// waitEchoReady waits until the operator reports the Echo Ready for its
// current generation.
func waitEchoReady(op *operatorProcess, key types.NamespacedName) {
	Eventually(func(g Gomega) {
		op.expectHealthy()
		e := &echov1alpha1.Echo{}
		g.Expect(k8sClient.Get(context.Background(), key, e)).To(Succeed())
		c := meta.FindStatusCondition(e.Status.Conditions, echov1alpha1.EchoConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(e.Status.ObservedGeneration).To(Equal(e.Generation))
	}, timeout, interval).Should(Succeed(), "Echo %s is Ready", key)
}
