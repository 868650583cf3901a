package helmreconciler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
)

// A failed upgrade tells whether Helm's client rolled it back, and how that
// went, by what it returns.
func TestRecordRollback(t *testing.T) {
	sch := runtime.NewScheme()
	if err := echov1alpha1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if err := opmetrics.Register(reg, opmetrics.NewCollector(fake.NewClientBuilder().WithScheme(sch).Build())); err != nil {
		t.Fatal(err)
	}
	rollbacks := func(outcome string) float64 {
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "echo_operator_helm_release_operations_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["operation"] == opmetrics.OperationRollback && labels["outcome"] == outcome {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	upgradeErr := errors.New("admission webhook refused the Deployment")
	cases := []struct {
		name        string
		rel         *release.Release
		err         error
		wantSuccess float64
		wantFailure float64
	}{
		{"rolled back", &release.Release{Version: 3}, upgradeErr, 1, 0},
		{"rollback failed", nil, fmt.Errorf("%sno deployed revision: original upgrade error: %w", rollbackFailedPrefix, upgradeErr), 0, 1},
		{"failed before a revision was stored", nil, upgradeErr, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			success, failure := rollbacks("success"), rollbacks("failure")
			recordRollback(tc.rel, tc.err)
			if got := rollbacks("success") - success; got != tc.wantSuccess {
				t.Errorf("successful rollbacks grew by %v, want %v", got, tc.wantSuccess)
			}
			if got := rollbacks("failure") - failure; got != tc.wantFailure {
				t.Errorf("failed rollbacks grew by %v, want %v", got, tc.wantFailure)
			}
		})
	}
}
