package e2enode

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The operator's Lease (cmd/manager/app/leaderelection.go), and the
// longest a standby takes to lead after the leader is gone, from the lease
// settings (docs/benchmarks.md#lease-settings: lease + 4.4 x retry).
const (
	leaseName      = "echo-operator.echo.dev"
	failoverBound  = 18400 * time.Millisecond
	metricsService = "echo-operator-controller-manager-metrics-service"
)

// TestOperatorRunsInItsPods checks the operator as `make deploy` runs it:
// two replicas of which one leads, metrics served to an authorized scraper
// through the metrics Service, the live API served by the pods through its
// APIService, and a standby that takes over within the documented bound
// when the leader's pod is deleted, and reconciles.
func TestOperatorRunsInItsPods(t *testing.T) {
	explainOnFailure(t, operatorNamespace)
	ns := restrictedNamespace(t, "operator")
	t.Run("metrics through the metrics Service", func(t *testing.T) {
		kubectl(t, "create", "serviceaccount", "scraper", "-n", ns)
		kubectl(t, "create", "clusterrolebinding", "e2enode-scraper", "--clusterrole=echo-operator-metrics-reader",
			"--serviceaccount="+ns+":scraper")
		metrics := runOnce(t, ns, oneShot{image: httpgetImage, serviceAccount: "scraper", command: []string{"/httpget",
			"-token-file", "/var/run/secrets/kubernetes.io/serviceaccount/token",
			"https://" + metricsService + "." + operatorNamespace + ".svc:8443/metrics"}})
		// Either replica may answer: the standby serves the operator's
		// metrics too, but no reconcile counts.
		if !strings.Contains(metrics, "# TYPE echo_operator_") {
			t.Fatalf("the metrics Service served:\n%.2000s", metrics)
		}
	})
	t.Run("the manager's NetworkPolicy, owned by its Deployment", func(t *testing.T) {
		// The leader applies it at start: it exists by the time the
		// rollout is done, or shortly after.
		kubectl(t, "wait", "-n", operatorNamespace, "--for=create", "networkpolicy/echo-operator-controller-manager", "--timeout=60s")
		owner := kubectl(t, "get", "networkpolicy", "echo-operator-controller-manager", "-n", operatorNamespace,
			"-o", "jsonpath={.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}")
		if owner != "Deployment/echo-operator-controller-manager" {
			t.Fatalf("the NetworkPolicy's owner is %q", owner)
		}
	})
	t.Run("the live API through its APIService", func(t *testing.T) {
		kubectlApply(t, ns, "apiVersion: echo.dev/v1alpha1\nkind: Echo\nmetadata:\n  name: live\nspec:\n  replicas: 1\n  message: live\n")
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/live", "--timeout=180s")
		if out := kubectl(t, "get", "echorevisions", "-n", ns); !strings.Contains(out, "live") {
			t.Fatalf("kubectl get echorevisions:\n%s", out)
		}
	})
	t.Run("the standby takes over", func(t *testing.T) {
		leader := leaderPod(t)
		deleted := time.Now()
		kubectl(t, "delete", "pod", "-n", operatorNamespace, leader, "--wait=false")
		var lease *coordinationv1.Lease
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			var err error
			lease, err = clientset.CoordinationV1().Leases(operatorNamespace).Get(ctx, leaseName, metav1.GetOptions{})
			if err != nil || lease.Spec.HolderIdentity == nil {
				return false, err
			}
			// A leader that stops releases the Lease: an empty holder.
			holder := *lease.Spec.HolderIdentity
			return holder != "" && !strings.HasPrefix(holder, leader+"_"), nil
		})
		if err != nil {
			t.Fatalf("no other replica took the lease from %s: %v", leader, err)
		}
		takeover := lease.Spec.AcquireTime.Sub(deleted)
		t.Logf("%s took over %v after the leader's pod was deleted", *lease.Spec.HolderIdentity, takeover)
		if takeover > failoverBound {
			t.Errorf("the standby took %v to lead, over the documented bound of %v", takeover, failoverBound)
		}
		kubectl(t, "patch", "-n", ns, "echo/live", "--type=merge", "-p", `{"spec":{"message":"after failover"}}`)
		kubectl(t, "wait", "-n", ns, "--for=condition=Ready", "echo/live", "--timeout=180s")
		if answer := getThroughPortForward(t, ns, "svc/live", "/"); !strings.Contains(answer, `"message":"after failover"`) {
			t.Fatalf("after the failover the Echo answered %s", answer)
		}
		kubectl(t, "rollout", "status", "-n", operatorNamespace, "deployment/echo-operator-controller-manager", "--timeout=180s")
	})
}

// leaderPod is the name of the operator's pod that holds the Lease: its
// identity is the pod's host name, the pod's name, and a unique suffix.
func leaderPod(t *testing.T) string {
	t.Helper()
	var holder string
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		lease, err := clientset.CoordinationV1().Leases(operatorNamespace).Get(ctx, leaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return false, nil
		}
		holder = *lease.Spec.HolderIdentity
		return holder != "", nil
	})
	name, _, found := strings.Cut(holder, "_")
	if err != nil || !found {
		t.Fatalf("the Lease's holder: %q, %v", holder, err)
	}
	return name
}
