package operatorchart

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// allMonitoring switches every monitoring object on.
const allMonitoring = `
monitoring:
  serviceMonitor: {enabled: true}
  prometheusRule: {enabled: true}
  podMonitor: {enabled: true}
  dashboard: {enabled: true}
`

// monitoringKinds are the kinds only the monitoring switches render.
var monitoringKinds = []string{"ServiceMonitor", "PodMonitor", "PrometheusRule", "ConfigMap"}

// TestMonitoringIsOffByDefault checks that the default values render no
// object of the Prometheus Operator, whose CRDs a plain cluster lacks.
func TestMonitoringIsOffByDefault(t *testing.T) {
	for _, o := range render(t, "") {
		for _, k := range monitoringKinds {
			if o.GetKind() == k {
				t.Errorf("the default values render %s %s", k, o.GetName())
			}
		}
	}
}

// TestMonitoringObjectsAreConfigPrometheus switches each monitoring object
// on and checks that it has the name and spec of config/prometheus's (the
// PrometheusRule's rules among them), in the release's namespace, and that
// the dashboard's ConfigMap holds config/grafana's dashboard as it is.
func TestMonitoringObjectsAreConfigPrometheus(t *testing.T) {
	objs := render(t, allMonitoring)
	for kind, file := range map[string]string{
		"ServiceMonitor": "config/prometheus/monitor.yaml",
		"PrometheusRule": "config/prometheus/prometheusrule.yaml",
		"PodMonitor":     "config/prometheus/echo_server_podmonitor.yaml",
	} {
		want := readObject(t, file)
		got := mustFind(t, objs, kind, want.GetName())
		if got.GetNamespace() != namespace {
			t.Errorf("%s %s is in namespace %q, want %q", kind, got.GetName(), got.GetNamespace(), namespace)
		}
		if !reflect.DeepEqual(got.Object["spec"], want.Object["spec"]) {
			t.Errorf("%s %s's spec is not that of %s:\n got %v\nwant %v", kind, got.GetName(), file, got.Object["spec"], want.Object["spec"])
		}
	}
	// The ServiceMonitor selects the metrics Service.
	monitor := mustFind(t, objs, "ServiceMonitor", "echo-operator-controller-manager-metrics-monitor")
	service := mustFind(t, objs, "Service", "echo-operator-controller-manager-metrics-service")
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if service.GetLabels()[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service lacks: %v", k, v, service.GetLabels())
		}
	}

	dashboard, err := os.ReadFile(filepath.Join(reporoot.Must(t), "config", "grafana", "echo-operator.json"))
	if err != nil {
		t.Fatal(err)
	}
	cm := mustFind(t, objs, "ConfigMap", "echo-operator-dashboard")
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("the dashboard's ConfigMap lacks the label grafana_dashboard=1: %v", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if got := data["echo-operator.json"]; got != strings.TrimSuffix(string(dashboard), "\n") {
		t.Errorf("the dashboard's ConfigMap does not hold config/grafana/echo-operator.json (%d bytes, want %d)", len(got), len(dashboard))
	}
}

// TestEachMonitoringSwitchRendersItsObject checks that each switch alone
// renders its object alone.
func TestEachMonitoringSwitchRendersItsObject(t *testing.T) {
	for _, c := range []struct{ value, kind string }{
		{"serviceMonitor", "ServiceMonitor"},
		{"prometheusRule", "PrometheusRule"},
		{"podMonitor", "PodMonitor"},
		{"dashboard", "ConfigMap"},
	} {
		t.Run(c.value, func(t *testing.T) {
			var got []string
			for _, o := range render(t, "monitoring: {"+c.value+": {enabled: true}}") {
				for _, k := range monitoringKinds {
					if o.GetKind() == k {
						got = append(got, k)
					}
				}
			}
			if len(got) != 1 || got[0] != c.kind {
				t.Errorf("monitoring.%s.enabled renders %v, want one %s", c.value, got, c.kind)
			}
		})
	}
}

// TestServiceMonitorSelectsTheMetricsServiceAlone checks that the
// ServiceMonitor, config/prometheus's among config/default's objects and
// the chart's among its own, selects the metrics Service and no other: the
// Prometheus Operator scrapes the port https of every Service it selects,
// and the live API's Service has one too.
func TestServiceMonitorSelectsTheMetricsServiceAlone(t *testing.T) {
	for name, objs := range map[string][]unstructured.Unstructured{
		"config":    append(kustomize(t, "config/default"), kustomize(t, "config/prometheus")...),
		"the chart": render(t, allMonitoring),
	} {
		monitor := mustFind(t, objs, "ServiceMonitor", "echo-operator-controller-manager-metrics-monitor")
		selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
		var selected []string
		for _, o := range objs {
			if o.GetKind() == "Service" && labels.SelectorFromSet(selector).Matches(labels.Set(o.GetLabels())) {
				selected = append(selected, o.GetName())
			}
		}
		if len(selected) != 1 || selected[0] != "echo-operator-controller-manager-metrics-service" {
			t.Errorf("in %s, the ServiceMonitor selects the Services %v, want the metrics Service alone", name, selected)
		}
	}
}
