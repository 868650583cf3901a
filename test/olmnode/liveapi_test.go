package olmnode

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/servingcert"
)

var apiServiceKind = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}

// turnOnLiveAPI sets LIVE_API_BIND_ADDRESS in the only Subscription of
// namespace, as docs/live-api.md shows, and waits until the operator has
// registered its APIService, owned by the ClusterRole every uninstall
// deletes.
func turnOnLiveAPI(t *testing.T, namespace string) {
	t.Helper()
	subscription := strings.TrimSpace(run(t, "get", "subscription", "-n", namespace, "-o", "name"))
	if subscription == "" || strings.Contains(subscription, "\n") {
		t.Fatalf("namespace %s holds not one Subscription but %q", namespace, subscription)
	}
	run(t, "patch", subscription, "-n", namespace, "--type=merge",
		"-p", `{"spec":{"config":{"env":[{"name":"LIVE_API_BIND_ADDRESS","value":":9443"}]}}}`)
	must(t, poll(context.Background(), installTimeout, "the live API's APIService, owned by "+servingcert.OwnerClusterRole, func(ctx context.Context) (bool, string, error) {
		apiService, err := get(ctx, apiServiceKind, "", livev1alpha1.APIServiceName)
		if err != nil || apiService == nil {
			return false, "no APIService", err
		}
		for _, ref := range apiService.GetOwnerReferences() {
			if ref.Kind == "ClusterRole" && ref.Name == servingcert.OwnerClusterRole {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("owners %v", apiService.GetOwnerReferences()), nil
	}))
}

// checkNoLiveAPIService waits until no APIService of the operator is
// left after an uninstall: kube-controller-manager's garbage collector
// deletes it once its owner ClusterRole is gone. One left behind would
// keep every namespace of the cluster from being deleted.
func checkNoLiveAPIService(t *testing.T) {
	t.Helper()
	must(t, poll(context.Background(), installTimeout, "no APIService of the operator after the uninstall", func(ctx context.Context) (bool, string, error) {
		apiService, err := get(ctx, apiServiceKind, "", livev1alpha1.APIServiceName)
		if err != nil || apiService == nil {
			return err == nil, "", err
		}
		return false, fmt.Sprintf("APIService %s, owners %v", apiService.GetName(), apiService.GetOwnerReferences()), nil
	}))
}
