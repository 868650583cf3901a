package olmnode

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
)

const (
	// catalogSourceName is the CatalogSource of docs/install.md.
	catalogSourceName = "echo-operator-catalog"
	// installTimeout bounds an install or an upgrade: OLM resolves,
	// unpacks the bundle in a Job, and the operator's pods start.
	installTimeout = 5 * time.Minute
	// managerDeployment is the operator's Deployment in the CSV.
	managerDeployment = "echo-operator-controller-manager"
	// sample is the sample Echo of config/samples.
	sample = "echo-sample"
)

// TestCatalogInstallUpgradeUninstall follows docs/install.md: a
// CatalogSource of the catalog image, then the operator installed for all
// namespaces, at the previous release, whose manager's pods reconcile the
// sample Echo to Ready with its pods serving; then the upgrade through the
// current release's `replaces`, approved by hand, after which the new
// release's pods reconcile the same Echo; then the uninstall, which leaves
// the CRDs and the Echo.
func TestCatalogInstallUpgradeUninstall(t *testing.T) {
	ctx := context.Background()
	const ns, team = "echo-operator", "team-a"
	explainOnFailure(t, ns, team)
	ensureCatalogSource(t)
	// The package server lists the catalog's packages shortly after the
	// catalog serves.
	must(t, poll(ctx, time.Minute, "the package manifest", func(context.Context) (bool, string, error) {
		out, err := kubectl.Run("get", "packagemanifests", packageName)
		return err == nil, out, nil
	}))
	runDocumented(t, documented("get", "packagemanifests", "echo-operator"))
	if ch := run(t, "get", "packagemanifests", packageName, "-o", "jsonpath={.status.defaultChannel}/{.status.channels[0].currentCSV}"); ch != "alpha/"+csvName(currentVersion) {
		t.Fatalf("the package manifest's default channel and head: %s", ch)
	}

	apply(t, docManifest(t, []string{"kind: Namespace", "kind: OperatorGroup"}))
	apply(t, docManifest(t, []string{"kind: Subscription"},
		"installPlanApproval: Automatic", "installPlanApproval: Manual\n  startingCSV: "+csvName(previousVersion)))
	approveInstallPlan(t, ns, csvName(previousVersion))
	must(t, waitCSVSucceeded(ctx, ns, csvName(previousVersion), installTimeout))
	checkManagerPods(t, ns, csvName(previousVersion))
	runDocumented(t, documented("get", "subscription,installplan,csv", "-n", "echo-operator"))
	runDocumented(t, documented("get", "deployment", "echo-operator-controller-manager", "-n", "echo-operator"))

	run(t, "create", "namespace", team)
	runDocumented(t, documented("apply", "-n", "team-a", "-f", "config/samples/echo_v1alpha1_echo.yaml"))
	waitEchoReady(t, team, 2)

	t.Run("upgrade through replaces", func(t *testing.T) {
		approveInstallPlan(t, ns, csvName(currentVersion))
		must(t, waitCSVSucceeded(ctx, ns, csvName(currentVersion), installTimeout))
		csv, err := get(ctx, csvKind, ns, csvName(currentVersion))
		must(t, err)
		if r := str(csv, "spec", "replaces"); r != csvName(previousVersion) {
			t.Fatalf("the new CSV replaces %q", r)
		}
		checkUpgraded(t, ns, team)
	})

	t.Run("uninstall", func(t *testing.T) {
		turnOnLiveAPI(t, ns)
		run(t, "delete", "-n", team, "echo/"+sample, "--timeout=180s")
		runDocumented(t, documented("delete", "subscription", "echo-operator", "-n", "echo-operator"))
		runDocumented(t, documented("delete", "csv", "echo-operator.v0.1.0", "-n", "echo-operator"))
		runDocumented(t, documented("delete", "operatorgroup", "echo-operator", "-n", "echo-operator"))
		runDocumented(t, documented("delete", "clusterrole", "-l",
			"olm.owner.kind=OperatorGroup,olm.owner=echo-operator,olm.owner.namespace=echo-operator"))
		run(t, "wait", "-n", ns, "--for=delete", "deployment/"+managerDeployment, "--timeout=180s")
		run(t, "get", "crd", "echoes.echo.dev")
		runDocumented(t, documented("delete", "crd", "echoes.echo.dev", "echobackups.echo.dev",
			"echobackupschedules.echo.dev", "echobackuplocations.echo.dev", "echorestores.echo.dev"))
		runDocumented(t, documented("delete", "clusterrole", "-l", "olm.owner=echo-operator.v0.1.0"))
		checkNoLiveAPIService(t)
		run(t, "delete", "namespace", ns, team, "--timeout=180s")
		checkNothingLeft(t, ns, team)
	})
}

// checkUpgraded checks an upgrade from the previous release to the current
// one in namespace: the replaced CSV goes, the current release's pods run,
// and they reconcile the sample Echo of team the previous release made.
func checkUpgraded(t *testing.T, namespace, team string) {
	t.Helper()
	must(t, poll(context.Background(), installTimeout, "the replaced CSV's removal", func(ctx context.Context) (bool, string, error) {
		old, err := get(ctx, csvKind, namespace, csvName(previousVersion))
		return old == nil, "present", err
	}))
	checkManagerPods(t, namespace, csvName(currentVersion))
	run(t, "scale", "-n", team, "echo/"+sample, "--replicas=1")
	waitEchoReady(t, team, 1)
}

// ensureCatalogSource creates the CatalogSource of docs/install.md, with
// the catalog image built here, once, and waits for OLM to serve it from
// its catalog pod.
func ensureCatalogSource(t *testing.T) {
	t.Helper()
	cs, err := get(context.Background(), catalogKind, olmNamespace, catalogSourceName)
	must(t, err)
	if cs == nil {
		apply(t, docManifest(t, []string{"kind: CatalogSource"},
			"registry.example.com/echo/echo-operator-catalog:v0.1.0", images.Catalog))
	}
	must(t, poll(context.Background(), installTimeout, "the catalog's connection", func(ctx context.Context) (bool, string, error) {
		cs, err := get(ctx, catalogKind, olmNamespace, catalogSourceName)
		if err != nil || cs == nil {
			return false, "no CatalogSource", err
		}
		state := str(cs, "status", "connectionState", "lastObservedState")
		return state == "READY", state, nil
	}))
}

// approveInstallPlan waits for the InstallPlan of the CSV in namespace and
// approves it, as a user with a Manual Subscription does.
func approveInstallPlan(t *testing.T, namespace, csv string) {
	t.Helper()
	var plan string
	must(t, poll(context.Background(), installTimeout, "the InstallPlan of "+csv, func(ctx context.Context) (bool, string, error) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(installPlanKind)
		if err := k8sClient.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return false, "", err
		}
		for _, ip := range list.Items {
			names, _, _ := unstructured.NestedStringSlice(ip.Object, "spec", "clusterServiceVersionNames")
			for _, n := range names {
				if n == csv {
					plan = ip.GetName()
					return true, plan, nil
				}
			}
		}
		return false, fmt.Sprintf("%d plans", len(list.Items)), nil
	}))
	runDocumented(t, documented("patch", "installplan", "install-abcde", "-n", "echo-operator", "--type", "merge",
		"-p", `{"spec":{"approved":true}}`).With("install-abcde", plan, "echo-operator", namespace))
}

// checkManagerPods checks that the CSV's Deployment runs the operator image
// built here in two ready pods, which OLM annotated.
func checkManagerPods(t *testing.T, namespace, csv string) {
	t.Helper()
	checkOperatorPods(t, namespace, csv, func(annotations map[string]string) bool {
		return annotations["olm.operatorGroup"] != ""
	})
}

// checkOperatorPods checks that the operator's Deployment, of the
// install what, runs the operator image built here in two ready pods whose
// annotations are as annotated says an install's are.
func checkOperatorPods(t *testing.T, namespace, what string, annotated func(map[string]string) bool) {
	t.Helper()
	run(t, "rollout", "status", "-n", namespace, "deployment/"+managerDeployment, "--timeout=180s")
	pods, err := clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	must(t, err)
	ready := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		if !annotated(p.Annotations) {
			t.Errorf("pod %s lacks the install's annotations: %v", p.Name, p.Annotations)
		}
		if got := p.Spec.Containers[0].Image; got != images.Operator {
			t.Errorf("pod %s runs %s, want %s", p.Name, got, images.Operator)
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.Ready {
				ready++
			}
		}
	}
	if ready != 2 {
		t.Fatalf("%d ready manager containers of %s in %s, want 2:\n%s", ready, what, namespace, describePods(namespace))
	}
	// The leader keeps the NetworkPolicy of the manager's pods.
	run(t, "wait", "-n", namespace, "--for=create", "networkpolicy/echo-operator-controller-manager", "--timeout=60s")
}

// waitEchoReady waits for the sample Echo's Ready condition and for
// replicas ready pods of it on the real node.
func waitEchoReady(t *testing.T, namespace string, replicas int) {
	t.Helper()
	run(t, "wait", "-n", namespace, "--for=condition=Ready", "echo/"+sample, "--timeout=180s")
	must(t, clusteruser.WaitReadyPods(context.Background(), clientset, namespace, "app.kubernetes.io/instance="+sample,
		realnode.NodeName, replicas, 3*time.Minute))
}
