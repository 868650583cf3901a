package e2enode

import (
	"context"
	"testing"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
)

// explainOnFailure prints, when the test fails, what a user would look at
// in namespace: the pods' state and events, and their containers' logs.
func explainOnFailure(t *testing.T, namespace string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pods in %s:\n%s", namespace, describePods(namespace))
		}
	})
}

// describePods tells the state of namespace's pods (clusteruser.DescribePods).
func describePods(namespace string) string {
	return clusteruser.DescribePods(context.Background(), clientset, namespace)
}
