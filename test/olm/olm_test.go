//go:build linux

package olm

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OLM's API, read and written as unstructured objects.
const (
	operatorsV1       = "operators.coreos.com/v1"
	operatorsV1alpha1 = "operators.coreos.com/v1alpha1"

	// ownerLabel is the label OLM puts on what it creates for a CSV.
	ownerLabel = "olm.owner"
)

func newObject(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// createOperatorGroup creates an OperatorGroup; no target namespaces means
// all namespaces. It is deleted when the test ends.
func createOperatorGroup(t *testing.T, namespace, name string, targets ...string) {
	t.Helper()
	og := newObject(operatorsV1, "OperatorGroup", namespace, name)
	if len(targets) > 0 {
		Expect(unstructured.SetNestedStringSlice(og.Object, targets, "spec", "targetNamespaces")).To(Succeed())
	}
	Expect(k8sClient.Create(context.Background(), og)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), og) })
}

// subscription is what a test subscribes to.
type subscription struct {
	namespace, name, channel, source string
	startingCSV                      string
	manual                           bool
	// env is the Subscription's config.env, which OLM sets on the
	// operator's Deployment.
	env map[string]string
}

// create creates the Subscription. When the test ends, the Subscription
// and every CSV in the namespace are deleted (OLM leaves the CRDs, as it
// does on a real cluster), and the test waits until the CSVs are gone.
func (s subscription) create(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	sub := newObject(operatorsV1alpha1, "Subscription", s.namespace, s.name)
	spec := map[string]any{
		"name":            packageName,
		"channel":         s.channel,
		"source":          s.source,
		"sourceNamespace": olmNamespace,
	}
	if s.startingCSV != "" {
		spec["startingCSV"] = s.startingCSV
	}
	if s.manual {
		spec["installPlanApproval"] = "Manual"
	}
	if len(s.env) > 0 {
		var env []any
		for _, k := range slices.Sorted(maps.Keys(s.env)) {
			env = append(env, map[string]any{"name": k, "value": s.env[k]})
		}
		spec["config"] = map[string]any{"env": env}
	}
	sub.Object["spec"] = spec
	ctx := context.Background()
	Expect(k8sClient.Create(ctx, sub)).To(Succeed())
	t.Cleanup(func() { uninstall(t, sub) })
	return sub
}

// uninstall deletes the Subscription and the CSVs of its namespace and
// waits until they are gone. It runs as a cleanup of t, after t's subtests
// (which may have taken gomega's default fail handler), so it asserts
// through t itself.
func uninstall(t *testing.T, sub *unstructured.Unstructured) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := sub.GetNamespace()
	_ = k8sClient.Delete(ctx, sub)
	// An InstallPlan OLM is still executing (it retries one whose status
	// update conflicted, after its CSV has succeeded) creates the CSV again
	// once it is deleted: the InstallPlans go first, and the CSVs are
	// deleted again until none is left.
	ip := newObject(operatorsV1alpha1, "InstallPlan", ns, "")
	if err := k8sClient.DeleteAllOf(ctx, ip, client.InNamespace(ns)); err != nil {
		t.Errorf("deleting the InstallPlans of %s: %v", ns, err)
		return
	}
	g.Eventually(func(g Gomega) {
		csv := newObject(operatorsV1alpha1, "ClusterServiceVersion", ns, "")
		g.Expect(k8sClient.DeleteAllOf(ctx, csv, client.InNamespace(ns))).To(Succeed())
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(operatorsV1alpha1)
		list.SetKind("ClusterServiceVersionList")
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}, timeout, interval).Should(Succeed(), "the CSVs of %s are deleted", ns)
}

// getCSV returns the CSV, failing g when it cannot be read.
func getCSV(g Gomega, namespace, name string) *unstructured.Unstructured {
	csv := newObject(operatorsV1alpha1, "ClusterServiceVersion", namespace, name)
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(csv), csv)).To(Succeed())
	return csv
}

// waitCSVSucceeded waits until the CSV reaches the Succeeded phase, and
// returns it. A CSV that fails ends the wait with its reason and message.
func waitCSVSucceeded(t *testing.T, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	var csv *unstructured.Unstructured
	Eventually(func(g Gomega) string {
		expectOLMRunning()
		csv = getCSV(g, namespace, name)
		phase, _, _ := unstructured.NestedString(csv.Object, "status", "phase")
		reason, _, _ := unstructured.NestedString(csv.Object, "status", "reason")
		message, _, _ := unstructured.NestedString(csv.Object, "status", "message")
		g.Expect(phase).NotTo(Equal("Failed"), "CSV %s failed: %s: %s", name, reason, message)
		return phase
	}, timeout, interval).Should(Equal("Succeeded"), "CSV %s/%s", namespace, name)
	return csv
}

// approveInstallPlan waits for the Subscription's InstallPlan that installs
// csvName and approves it.
func approveInstallPlan(t *testing.T, sub *unstructured.Unstructured, csvName string) {
	t.Helper()
	ctx := context.Background()
	ip := newObject(operatorsV1alpha1, "InstallPlan", sub.GetNamespace(), "")
	Eventually(func(g Gomega) []string {
		expectOLMRunning()
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sub), sub)).To(Succeed())
		name, _, _ := unstructured.NestedString(sub.Object, "status", "installPlanRef", "name")
		g.Expect(name).NotTo(BeEmpty(), "the Subscription has no InstallPlan yet")
		ip.SetName(name)
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ip), ip)).To(Succeed())
		names, _, _ := unstructured.NestedStringSlice(ip.Object, "spec", "clusterServiceVersionNames")
		return names
	}, timeout, interval).Should(ContainElement(csvName), "an InstallPlan for %s", csvName)
	approved, _, _ := unstructured.NestedBool(ip.Object, "spec", "approved")
	Expect(approved).To(BeFalse(), "installPlanApproval Manual leaves the InstallPlan to approve")
	patch := client.MergeFrom(ip.DeepCopy())
	Expect(unstructured.SetNestedField(ip.Object, true, "spec", "approved")).To(Succeed())
	Expect(k8sClient.Patch(ctx, ip, patch)).To(Succeed())
}

// csvSpec is the part of a CSV the tests check against the cluster.
type csvSpec struct {
	APIServiceDefinitions struct {
		Owned []json.RawMessage `json:"owned"`
	} `json:"apiservicedefinitions"`
	CustomResourceDefinitions struct {
		Owned []struct {
			Name string `json:"name"`
		} `json:"owned"`
	} `json:"customresourcedefinitions"`
	Install struct {
		Spec struct {
			ClusterPermissions []permission `json:"clusterPermissions"`
			Permissions        []permission `json:"permissions"`
			Deployments        []struct {
				Name string `json:"name"`
			} `json:"deployments"`
		} `json:"spec"`
	} `json:"install"`
}

type permission struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

func specOf(csv *unstructured.Unstructured) csvSpec {
	var s csvSpec
	raw, ok := csv.Object["spec"].(map[string]any)
	Expect(ok).To(BeTrue(), "CSV %s has a spec", csv.GetName())
	Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &s)).To(Succeed())
	return s
}

// expectCRDsEstablished checks that every CRD the CSV owns exists and is
// Established.
func expectCRDsEstablished(spec csvSpec) {
	Expect(spec.CustomResourceDefinitions.Owned).NotTo(BeEmpty())
	for _, owned := range spec.CustomResourceDefinitions.Owned {
		Eventually(func(g Gomega) {
			crd := newObject("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", owned.Name)
			g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(crd), crd)).To(Succeed())
			conditions, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			g.Expect(conditions).To(ContainElement(And(
				HaveKeyWithValue("type", "Established"), HaveKeyWithValue("status", "True"))),
				"CRD %s is Established", owned.Name)
		}, timeout, interval).Should(Succeed())
	}
}

// expectServiceAccounts checks that the ServiceAccount of every permission
// exists in the install namespace.
func expectServiceAccounts(namespace string, spec csvSpec) {
	for _, p := range append(spec.Install.Spec.ClusterPermissions, spec.Install.Spec.Permissions...) {
		sa := &corev1.ServiceAccount{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: p.ServiceAccountName}, sa)).
			To(Succeed(), "ServiceAccount %s/%s", namespace, p.ServiceAccountName)
	}
}

// allowed asks the API server whether the ServiceAccount may do verb on
// group/resource in namespace ("" is cluster-wide).
func allowed(g Gomega, saNamespace, saName string, a access, namespace string) bool {
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + saNamespace + ":" + saName,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: a.verb, Group: a.group, Resource: a.resource, Name: a.name,
		},
	}}
	g.Expect(k8sClient.Create(context.Background(), sar)).To(Succeed())
	return sar.Status.Allowed
}

// access is one request a policy rule allows: on any object of the
// resource, or on the one named.
type access struct{ verb, group, resource, name string }

func (a access) String() string {
	s := a.verb + " " + a.resource + "." + a.group
	if a.name != "" {
		s += " named " + a.name
	}
	return s
}

// accessesOf expands rules into the requests they allow.
func accessesOf(rules []rbacv1.PolicyRule) []access {
	var out []access
	for _, rule := range rules {
		Expect(rule.NonResourceURLs).To(BeEmpty(), "the operator needs no non-resource URLs")
		names := rule.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				for _, verb := range rule.Verbs {
					for _, name := range names {
						out = append(out, access{verb: verb, group: group, resource: resource, name: name})
					}
				}
			}
		}
	}
	return out
}

// expectGranted checks, by SubjectAccessReviews, that the ServiceAccount
// holds every rule of the permissions in each namespace ("" is
// cluster-wide), and that a rule that names its objects reaches no other.
// OLM creates the Roles and bindings asynchronously, so this waits.
func expectGranted(saNamespace string, perms []permission, namespaces ...string) {
	for _, p := range perms {
		for _, a := range accessesOf(p.Rules) {
			for _, ns := range namespaces {
				Eventually(func(g Gomega) bool {
					return allowed(g, saNamespace, p.ServiceAccountName, a, ns)
				}, timeout, interval).Should(BeTrue(), "%s may %s in %q", p.ServiceAccountName, a, ns)
				if a.name != "" {
					other := a
					other.name = "another-" + a.name
					Expect(allowed(Default, saNamespace, p.ServiceAccountName, other, ns)).
						To(BeFalse(), "%s may %s in %q", p.ServiceAccountName, other, ns)
				}
			}
		}
	}
}

// expectDenied checks, by SubjectAccessReviews, that the ServiceAccount
// holds none of the rules in any of the namespaces ("" is cluster-wide).
// It does not wait: call it after expectGranted, once OLM has created
// every Role and binding of the CSV.
func expectDenied(saNamespace, saName string, rules []rbacv1.PolicyRule, namespaces ...string) {
	for _, a := range accessesOf(rules) {
		for _, ns := range namespaces {
			Expect(allowed(Default, saNamespace, saName, a, ns)).
				To(BeFalse(), "%s may %s in %q", saName, a, ns)
		}
	}
}
