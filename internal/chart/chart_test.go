package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	chartDir    = "../../helm-charts/echo"
	releaseName = "my-echo"
	namespace   = "echo-system"
)

// loadChart loads the echo chart once per test.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := Load(chartDir)
	if err != nil {
		t.Fatalf("Load(%s): %v", chartDir, err)
	}
	return ch
}

// values parses a values document the way Helm parses a values file.
func values(t *testing.T, doc string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(doc))
	if err != nil {
		t.Fatalf("parsing values %q: %v", doc, err)
	}
	return v.AsMap()
}

func render(t *testing.T, vals map[string]any) []unstructured.Unstructured {
	t.Helper()
	objs, err := Render(loadChart(t), releaseName, namespace, vals)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return objs
}

func kinds(objs []unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetKind())
	}
	return out
}

func find(t *testing.T, objs []unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	for i := range objs {
		if objs[i].GetKind() == kind {
			return &objs[i]
		}
	}
	t.Fatalf("no %s rendered; got %v", kind, kinds(objs))
	return nil
}

// field returns the value at path (map keys; ints index lists) or nil.
func field(obj map[string]any, path ...any) any {
	var cur any = obj
	for _, p := range path {
		switch key := p.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil
			}
			cur = m[key]
		case int:
			l, ok := cur.([]any)
			if !ok || key >= len(l) {
				return nil
			}
			cur = l[key]
		default:
			panic("bad path element")
		}
	}
	return cur
}

func hasField(obj map[string]any, path ...any) bool {
	parent := field(obj, path[:len(path)-1]...)
	m, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[path[len(path)-1].(string)]
	return ok
}

func expect(t *testing.T, obj *unstructured.Unstructured, want any, path ...any) {
	t.Helper()
	if got := field(obj.Object, path...); !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s: %v = %#v, want %#v", obj.GetKind(), obj.GetName(), path, got, want)
	}
}

func expectAbsent(t *testing.T, obj *unstructured.Unstructured, path ...any) {
	t.Helper()
	if hasField(obj.Object, path...) {
		t.Errorf("%s %s: %v = %#v, want absent", obj.GetKind(), obj.GetName(), path, field(obj.Object, path...))
	}
}

func podSpec(d *unstructured.Unstructured) map[string]any {
	m, _ := field(d.Object, "spec", "template", "spec").(map[string]any)
	return m
}

func container(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	cs, _ := field(d.Object, "spec", "template", "spec", "containers").([]any)
	if len(cs) != 1 {
		t.Fatalf("want exactly 1 container, got %d", len(cs))
	}
	return cs[0].(map[string]any)
}

// env maps the container's environment variables to their value, or to
// their valueFrom for references.
func env(t *testing.T, d *unstructured.Unstructured) map[string]any {
	t.Helper()
	out := map[string]any{}
	list, _ := container(t, d)["env"].([]any)
	for _, e := range list {
		m := e.(map[string]any)
		if v, ok := m["value"]; ok {
			out[m["name"].(string)] = v
		} else {
			out[m["name"].(string)] = m["valueFrom"]
		}
	}
	return out
}

var selectorLabels = map[string]any{
	"app.kubernetes.io/name":     "echo",
	"app.kubernetes.io/instance": releaseName,
}

func commonLabels(version string) map[string]any {
	return map[string]any{
		"app.kubernetes.io/name":       "echo",
		"app.kubernetes.io/instance":   releaseName,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/version":    version,
		"app.kubernetes.io/component":  "server",
		"helm.sh/chart":                "echo-0.1.0",
	}
}

func TestChartMetadata(t *testing.T) {
	ch := loadChart(t)
	md := ch.Metadata
	if md.APIVersion != chart.APIVersionV2 || md.Name != "echo" || md.Version != "0.1.0" ||
		md.AppVersion != "0.1.0" || md.Type != "application" || md.KubeVersion != ">=1.27.0-0" {
		t.Errorf("unexpected Chart.yaml metadata: %+v", md)
	}
	if err := md.Validate(); err != nil {
		t.Errorf("Chart.yaml does not validate: %v", err)
	}
	if ch.Schema == nil {
		t.Error("values.schema.json was not loaded")
	}
	for _, name := range []string{"deployment", "service", "ingress", "hpa", "pdb", "pvc"} {
		p := filepath.Join(chartDir, "templates", name+".yaml")
		if _, err := os.Stat(p); err != nil {
			t.Errorf("template missing: %v", err)
		}
	}
}

// The chart as loaded keeps no file beside Chart.yaml, the templates, the
// values and the schema: Helm stores every other file of the chart in each
// release record, and the lint values under ci/ are for helm lint only
// (.helmignore).
func TestChartCarriesNoOtherFiles(t *testing.T) {
	if _, err := os.Stat(filepath.Join(chartDir, "ci", "all-enabled-values.yaml")); err != nil {
		t.Fatalf("the lint values of make lint: %v", err)
	}
	for _, f := range loadChart(t).Files {
		t.Errorf("the loaded chart carries %s (%d bytes) into every release record", f.Name, len(f.Data))
	}
}

func TestDefaults(t *testing.T) {
	objs := render(t, nil)
	if got, want := kinds(objs), []string{"Deployment", "Service"}; !slices.Equal(got, want) {
		t.Fatalf("kinds = %v, want %v", got, want)
	}
	for i := range objs {
		o := &objs[i]
		if o.GetName() != releaseName || o.GetNamespace() != namespace {
			t.Errorf("%s: name/namespace = %s/%s, want %s/%s", o.GetKind(), o.GetNamespace(), o.GetName(), namespace, releaseName)
		}
		expect(t, o, commonLabels("v0.1.0"), "metadata", "labels")
	}

	d := find(t, objs, "Deployment")
	expect(t, d, "apps/v1", "apiVersion")
	expect(t, d, int64(1), "spec", "replicas")
	expect(t, d, int64(3), "spec", "revisionHistoryLimit")
	expect(t, d, selectorLabels, "spec", "selector", "matchLabels")
	expect(t, d, commonLabels("v0.1.0"), "spec", "template", "metadata", "labels")
	expect(t, d, "RollingUpdate", "spec", "strategy", "type")
	expectAbsent(t, d, "metadata", "annotations")
	expect(t, d, map[string]any{
		"prometheus.io/scrape": "true",
		"prometheus.io/port":   "8080",
		"prometheus.io/path":   "/metrics",
	}, "spec", "template", "metadata", "annotations")

	expect(t, d, false, "spec", "template", "spec", "automountServiceAccountToken")
	expect(t, d, int64(30), "spec", "template", "spec", "terminationGracePeriodSeconds")
	podSec := field(d.Object, "spec", "template", "spec", "securityContext").(map[string]any)
	for k, want := range map[string]any{
		"runAsNonRoot": true, "runAsUser": int64(65532), "runAsGroup": int64(65532), "fsGroup": int64(65532),
		"seccompProfile": map[string]any{"type": "RuntimeDefault"},
	} {
		if !reflect.DeepEqual(podSec[k], want) {
			t.Errorf("pod securityContext.%s = %#v, want %#v", k, podSec[k], want)
		}
	}
	for _, k := range []string{"volumes", "nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "imagePullSecrets"} {
		if _, ok := podSpec(d)[k]; ok {
			t.Errorf("pod spec has %s by default: %#v", k, podSpec(d)[k])
		}
	}

	c := container(t, d)
	if c["name"] != "echo" || c["image"] != "quay.io/echo-operator/echo-server:v0.1.0" || c["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("container name/image/pullPolicy = %v/%v/%v", c["name"], c["image"], c["imagePullPolicy"])
	}
	wantCSec := map[string]any{
		"allowPrivilegeEscalation": false,
		"readOnlyRootFilesystem":   true,
		"runAsNonRoot":             true,
		"privileged":               false,
		"capabilities":             map[string]any{"drop": []any{"ALL"}},
	}
	if !reflect.DeepEqual(c["securityContext"], wantCSec) {
		t.Errorf("container securityContext = %#v, want %#v", c["securityContext"], wantCSec)
	}
	wantEnv := map[string]any{
		"ECHO_LISTEN":   ":8080",
		"ECHO_MESSAGE":  "Hello from Echo",
		"ECHO_INSTANCE": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.name"}},
	}
	if got := env(t, d); !reflect.DeepEqual(got, wantEnv) {
		t.Errorf("env = %#v, want %#v", got, wantEnv)
	}
	wantPorts := []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}}
	if !reflect.DeepEqual(c["ports"], wantPorts) {
		t.Errorf("ports = %#v, want %#v", c["ports"], wantPorts)
	}
	for probe, path := range map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz", "startupProbe": "/healthz"} {
		if got := field(c, probe, "httpGet"); !reflect.DeepEqual(got, map[string]any{"path": path, "port": "http"}) {
			t.Errorf("%s.httpGet = %#v, want GET %s on http", probe, got, path)
		}
	}
	wantRes := map[string]any{
		"requests": map[string]any{"cpu": "10m", "memory": "32Mi"},
		"limits":   map[string]any{"cpu": "200m", "memory": "64Mi"},
	}
	if !reflect.DeepEqual(c["resources"], wantRes) {
		t.Errorf("resources = %#v, want %#v", c["resources"], wantRes)
	}
	if _, ok := c["volumeMounts"]; ok {
		t.Errorf("container has volumeMounts without persistence: %#v", c["volumeMounts"])
	}

	s := find(t, objs, "Service")
	expect(t, s, "ClusterIP", "spec", "type")
	expect(t, s, "None", "spec", "sessionAffinity")
	expect(t, s, selectorLabels, "spec", "selector")
	expect(t, s, []any{map[string]any{"name": "http", "port": int64(80), "targetPort": "http", "protocol": "TCP"}}, "spec", "ports")
	expectAbsent(t, s, "spec", "externalTrafficPolicy")
	expectAbsent(t, s, "metadata", "annotations")
}

func TestAutoscaling(t *testing.T) {
	tests := []struct {
		name             string
		values           string
		wantMin, wantMax int64
		wantKinds        []string
	}{
		{
			name:      "plain",
			values:    "replicas: 4\nautoscaling: {enabled: true, minReplicas: 2, maxReplicas: 7, targetCPUUtilizationPercentage: 60}",
			wantMin:   2,
			wantMax:   7,
			wantKinds: []string{"Deployment", "HorizontalPodAutoscaler", "Service"},
		},
		{
			name:      "defaults",
			values:    "autoscaling: {enabled: true}",
			wantMin:   1,
			wantMax:   5,
			wantKinds: []string{"Deployment", "HorizontalPodAutoscaler", "Service"},
		},
		{
			name:      "high availability, with the bounds the operator gives",
			values:    "highAvailability: {enabled: true}\nautoscaling: {enabled: true, minReplicas: 3, maxReplicas: 4}",
			wantMin:   3,
			wantMax:   4,
			wantKinds: []string{"Deployment", "HorizontalPodAutoscaler", "PodDisruptionBudget", "Service"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, values(t, tc.values))
			if got := kinds(objs); !slices.Equal(got, tc.wantKinds) {
				t.Fatalf("kinds = %v, want %v", got, tc.wantKinds)
			}
			d := find(t, objs, "Deployment")
			expectAbsent(t, d, "spec", "replicas")
			h := find(t, objs, "HorizontalPodAutoscaler")
			expect(t, h, "autoscaling/v2", "apiVersion")
			expect(t, h, releaseName, "metadata", "name")
			expect(t, h, namespace, "metadata", "namespace")
			expect(t, h, commonLabels("v0.1.0"), "metadata", "labels")
			expect(t, h, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": releaseName}, "spec", "scaleTargetRef")
			expect(t, h, tc.wantMin, "spec", "minReplicas")
			expect(t, h, tc.wantMax, "spec", "maxReplicas")
			if got := field(h.Object, "spec", "metrics", 0, "resource"); got == nil ||
				field(got.(map[string]any), "name") != "cpu" ||
				field(got.(map[string]any), "target", "type") != "Utilization" {
				t.Errorf("metrics = %#v, want a CPU utilization target", field(h.Object, "spec", "metrics"))
			}
		})
	}

	t.Run("target utilization", func(t *testing.T) {
		objs := render(t, values(t, "autoscaling: {enabled: true, targetCPUUtilizationPercentage: 65}"))
		expect(t, find(t, objs, "HorizontalPodAutoscaler"), int64(65), "spec", "metrics", 0, "resource", "target", "averageUtilization")
	})

	for name, doc := range map[string]string{
		"minReplicas above maxReplicas": "autoscaling: {enabled: true, minReplicas: 6, maxReplicas: 5}",
		"no CPU request":                "autoscaling: {enabled: true}\nresources: {requests: {cpu: null}}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Render(loadChart(t), releaseName, namespace, values(t, doc)); err == nil {
				t.Fatal("Render succeeded, want an error")
			}
		})
	}
}

func TestHighAvailability(t *testing.T) {
	userAffinity := map[string]any{
		"nodeAffinity": map[string]any{
			"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{
					"matchExpressions": []any{map[string]any{
						"key": "kubernetes.io/arch", "operator": "In", "values": []any{"arm64"},
					}},
				}},
			},
		},
	}
	defaultAntiAffinity := map[string]any{
		"podAntiAffinity": map[string]any{
			"preferredDuringSchedulingIgnoredDuringExecution": []any{map[string]any{
				"weight": int64(100),
				"podAffinityTerm": map[string]any{
					"topologyKey":   "kubernetes.io/hostname",
					"labelSelector": map[string]any{"matchLabels": selectorLabels},
				},
			}},
		},
	}
	tests := []struct {
		name         string
		values       map[string]any
		wantReplicas int64
		wantAffinity map[string]any
	}{
		{
			name:         "replicas as the operator gives them",
			values:       map[string]any{"replicas": 3, "highAvailability": map[string]any{"enabled": true}},
			wantReplicas: 3,
			wantAffinity: defaultAntiAffinity,
		},
		{
			name:         "more replicas kept",
			values:       map[string]any{"replicas": 5, "highAvailability": map[string]any{"enabled": true}},
			wantReplicas: 5,
			wantAffinity: defaultAntiAffinity,
		},
		{
			name:         "user affinity wins",
			values:       map[string]any{"replicas": 3, "highAvailability": map[string]any{"enabled": true}, "affinity": userAffinity},
			wantReplicas: 3,
			wantAffinity: userAffinity,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.values)
			if got, want := kinds(objs), []string{"Deployment", "PodDisruptionBudget", "Service"}; !slices.Equal(got, want) {
				t.Fatalf("kinds = %v, want %v", got, want)
			}
			d := find(t, objs, "Deployment")
			expect(t, d, tc.wantReplicas, "spec", "replicas")
			expect(t, d, tc.wantAffinity, "spec", "template", "spec", "affinity")
			expect(t, d, map[string]any{
				"type":          "RollingUpdate",
				"rollingUpdate": map[string]any{"maxUnavailable": int64(0), "maxSurge": int64(1)},
			}, "spec", "strategy")

			spread, _ := podSpec(d)["topologySpreadConstraints"].([]any)
			keys := map[string]string{}
			for _, c := range spread {
				m := c.(map[string]any)
				keys[m["topologyKey"].(string)] = m["whenUnsatisfiable"].(string)
				if m["maxSkew"] != int64(1) || !reflect.DeepEqual(field(m, "labelSelector", "matchLabels"), selectorLabels) {
					t.Errorf("spread constraint %#v: want maxSkew 1 over the selector labels", m)
				}
			}
			wantKeys := map[string]string{"kubernetes.io/hostname": "ScheduleAnyway", "topology.kubernetes.io/zone": "ScheduleAnyway"}
			if !reflect.DeepEqual(keys, wantKeys) {
				t.Errorf("topologySpreadConstraints = %v, want %v", keys, wantKeys)
			}

			p := find(t, objs, "PodDisruptionBudget")
			expect(t, p, "policy/v1", "apiVersion")
			expect(t, p, releaseName, "metadata", "name")
			expect(t, p, namespace, "metadata", "namespace")
			expect(t, p, commonLabels("v0.1.0"), "metadata", "labels")
			expect(t, p, int64(1), "spec", "maxUnavailable")
			expect(t, p, selectorLabels, "spec", "selector", "matchLabels")
			expectAbsent(t, p, "spec", "minAvailable")
		})
	}
}

func TestPersistence(t *testing.T) {
	tests := []struct {
		name             string
		values           string
		wantStrategy     map[string]any
		wantAccessModes  []any
		wantStorageClass any
		wantSize         string
	}{
		{
			name:             "ReadWriteOnce recreates",
			values:           "persistence: {enabled: true}",
			wantStrategy:     map[string]any{"type": "Recreate"},
			wantAccessModes:  []any{"ReadWriteOnce"},
			wantStorageClass: nil,
			wantSize:         "1Gi",
		},
		{
			name:             "ReadWriteOncePod with a storage class recreates",
			values:           "persistence: {enabled: true, size: 5Gi, storageClassName: fast-ssd, accessModes: [ReadWriteOncePod]}",
			wantStrategy:     map[string]any{"type": "Recreate"},
			wantAccessModes:  []any{"ReadWriteOncePod"},
			wantStorageClass: "fast-ssd",
			wantSize:         "5Gi",
		},
		{
			name:            "ReadWriteMany rolls",
			values:          "persistence: {enabled: true, accessModes: [ReadWriteMany]}",
			wantStrategy:    map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "25%", "maxSurge": "25%"}},
			wantAccessModes: []any{"ReadWriteMany"},
			wantSize:        "1Gi",
		},
		{
			name:   "ReadWriteMany with high availability rolls without unavailability",
			values: "highAvailability: {enabled: true}\npersistence: {enabled: true, accessModes: [ReadWriteMany, ReadOnlyMany]}",
			wantStrategy: map[string]any{"type": "RollingUpdate",
				"rollingUpdate": map[string]any{"maxUnavailable": int64(0), "maxSurge": int64(1)}},
			wantAccessModes: []any{"ReadWriteMany", "ReadOnlyMany"},
			wantSize:        "1Gi",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, values(t, tc.values))
			pvc := find(t, objs, "PersistentVolumeClaim")
			expect(t, pvc, "v1", "apiVersion")
			expect(t, pvc, releaseName+"-data", "metadata", "name")
			expect(t, pvc, namespace, "metadata", "namespace")
			expect(t, pvc, commonLabels("v0.1.0"), "metadata", "labels")
			expectAbsent(t, pvc, "metadata", "annotations")
			expect(t, pvc, tc.wantAccessModes, "spec", "accessModes")
			expect(t, pvc, tc.wantSize, "spec", "resources", "requests", "storage")
			if tc.wantStorageClass == nil {
				expectAbsent(t, pvc, "spec", "storageClassName")
			} else {
				expect(t, pvc, tc.wantStorageClass, "spec", "storageClassName")
			}

			d := find(t, objs, "Deployment")
			expect(t, d, tc.wantStrategy, "spec", "strategy")
			expect(t, d, []any{map[string]any{
				"name":                  "data",
				"persistentVolumeClaim": map[string]any{"claimName": releaseName + "-data"},
			}}, "spec", "template", "spec", "volumes")
			if got := container(t, d)["volumeMounts"]; !reflect.DeepEqual(got, []any{map[string]any{"name": "data", "mountPath": "/data"}}) {
				t.Errorf("volumeMounts = %#v, want data at /data", got)
			}
			if got := env(t, d)["ECHO_DATA_DIR"]; got != "/data" {
				t.Errorf("ECHO_DATA_DIR = %#v, want /data", got)
			}
		})
	}
}

func TestIngress(t *testing.T) {
	backend := map[string]any{"service": map[string]any{"name": releaseName, "port": map[string]any{"number": int64(8081)}}}
	paths := map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix", "backend": backend}}}
	tests := []struct {
		name      string
		values    string
		wantClass any
		wantTLS   any
		wantRules []any
	}{
		{
			name:      "host, class and TLS",
			values:    "service: {port: 8081}\ningress: {enabled: true, className: nginx, host: echo.example.com, tlsSecretName: echo-tls}",
			wantClass: "nginx",
			wantTLS:   []any{map[string]any{"secretName": "echo-tls", "hosts": []any{"echo.example.com"}}},
			wantRules: []any{map[string]any{"host": "echo.example.com", "http": paths}},
		},
		{
			name:      "no host, class or TLS",
			values:    "service: {port: 8081}\ningress: {enabled: true}",
			wantRules: []any{map[string]any{"http": paths}},
		},
		{
			name:      "wildcard host",
			values:    "service: {port: 8081}\ningress: {enabled: true, host: '*.apps.example.com'}",
			wantRules: []any{map[string]any{"host": "*.apps.example.com", "http": paths}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, values(t, tc.values))
			if got, want := kinds(objs), []string{"Deployment", "Ingress", "Service"}; !slices.Equal(got, want) {
				t.Fatalf("kinds = %v, want %v", got, want)
			}
			ing := find(t, objs, "Ingress")
			expect(t, ing, "networking.k8s.io/v1", "apiVersion")
			expect(t, ing, releaseName, "metadata", "name")
			expect(t, ing, namespace, "metadata", "namespace")
			expect(t, ing, commonLabels("v0.1.0"), "metadata", "labels")
			if tc.wantClass == nil {
				expectAbsent(t, ing, "spec", "ingressClassName")
			} else {
				expect(t, ing, tc.wantClass, "spec", "ingressClassName")
			}
			if tc.wantTLS == nil {
				expectAbsent(t, ing, "spec", "tls")
			} else {
				expect(t, ing, tc.wantTLS, "spec", "tls")
			}
			expect(t, ing, tc.wantRules, "spec", "rules")
		})
	}
}

func TestService(t *testing.T) {
	tests := []struct {
		name       string
		values     string
		wantType   string
		wantPolicy any
		wantAnn    any
	}{
		{name: "ClusterIP", values: "service: {type: ClusterIP, port: 8000}", wantType: "ClusterIP"},
		{
			name:       "NodePort with annotations",
			values:     "service: {type: NodePort, port: 8000, annotations: {example.com/owner: team-a}}",
			wantType:   "NodePort",
			wantPolicy: "Cluster",
			wantAnn:    map[string]any{"example.com/owner": "team-a"},
		},
		{
			name:       "LoadBalancer",
			values:     "service: {type: LoadBalancer, port: 8000, annotations: {service.beta.kubernetes.io/aws-load-balancer-type: nlb}}",
			wantType:   "LoadBalancer",
			wantPolicy: "Cluster",
			wantAnn:    map[string]any{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := find(t, render(t, values(t, tc.values)), "Service")
			expect(t, s, tc.wantType, "spec", "type")
			expect(t, s, int64(8000), "spec", "ports", 0, "port")
			expect(t, s, "http", "spec", "ports", 0, "targetPort")
			if tc.wantPolicy == nil {
				expectAbsent(t, s, "spec", "externalTrafficPolicy")
			} else {
				expect(t, s, tc.wantPolicy, "spec", "externalTrafficPolicy")
			}
			if tc.wantAnn == nil {
				expectAbsent(t, s, "metadata", "annotations")
			} else {
				expect(t, s, tc.wantAnn, "metadata", "annotations")
			}
		})
	}
}

func TestSpecGenerationAnnotation(t *testing.T) {
	tests := []struct {
		name   string
		values map[string]any
		want   any // nil: no annotation
	}{
		{name: "zero", values: map[string]any{"specGeneration": 0}},
		{name: "one", values: map[string]any{"specGeneration": int64(1)}, want: "1"},
		{name: "large int64", values: map[string]any{"specGeneration": int64(12345678)}, want: "12345678"},
		{name: "large from a values file", values: values(t, "specGeneration: 12345678"), want: "12345678"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := find(t, render(t, tc.values), "Deployment")
			if tc.want == nil {
				expectAbsent(t, d, "metadata", "annotations")
			} else {
				expect(t, d, map[string]any{"echo.dev/spec-generation": tc.want}, "metadata", "annotations")
			}
			if hasField(d.Object, "spec", "template", "metadata", "annotations", "echo.dev/spec-generation") {
				t.Error("spec-generation annotation must not be on the pod template")
			}
		})
	}
}

func TestSchedulingPassThrough(t *testing.T) {
	d := find(t, render(t, values(t, `
nodeSelector:
  kubernetes.io/os: linux
  example.com/pool: echo
tolerations:
  - key: dedicated
    operator: Equal
    value: echo
    effect: NoSchedule
  - operator: Exists
    effect: NoExecute
    tolerationSeconds: 30
`)), "Deployment")
	expect(t, d, map[string]any{"kubernetes.io/os": "linux", "example.com/pool": "echo"}, "spec", "template", "spec", "nodeSelector")
	expect(t, d, []any{
		map[string]any{"key": "dedicated", "operator": "Equal", "value": "echo", "effect": "NoSchedule"},
		map[string]any{"operator": "Exists", "effect": "NoExecute", "tolerationSeconds": int64(30)},
	}, "spec", "template", "spec", "tolerations")
	expectAbsent(t, d, "spec", "template", "spec", "affinity")
	expectAbsent(t, d, "spec", "template", "spec", "topologySpreadConstraints")
}

func TestPodSettings(t *testing.T) {
	d := find(t, render(t, values(t, `
image: registry.example.com:5000/team/echo-server:1.2.3
imagePullPolicy: Always
imagePullSecrets: [{name: regcred}]
message: "costs $(PRICE) or $$5"
port: 9090
resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 256Mi}}
podAnnotations: {example.com/team: platform, prometheus.io/scrape: "false"}
`)), "Deployment")
	c := container(t, d)
	if c["image"] != "registry.example.com:5000/team/echo-server:1.2.3" || c["imagePullPolicy"] != "Always" {
		t.Errorf("image/pullPolicy = %v/%v", c["image"], c["imagePullPolicy"])
	}
	expect(t, d, []any{map[string]any{"name": "regcred"}}, "spec", "template", "spec", "imagePullSecrets")
	expect(t, d, commonLabels("1.2.3"), "metadata", "labels")
	e := env(t, d)
	if e["ECHO_LISTEN"] != ":9090" {
		t.Errorf("ECHO_LISTEN = %#v, want :9090", e["ECHO_LISTEN"])
	}
	// "$$" is how a literal "$" is written in a container env value.
	if want := "costs $$(PRICE) or $$$$5"; e["ECHO_MESSAGE"] != want {
		t.Errorf("ECHO_MESSAGE = %#v, want %#v", e["ECHO_MESSAGE"], want)
	}
	if got := field(c, "ports", 0, "containerPort"); got != int64(9090) {
		t.Errorf("containerPort = %#v, want 9090", got)
	}
	wantRes := map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}, "limits": map[string]any{"memory": "256Mi"}}
	if !reflect.DeepEqual(c["resources"], wantRes) {
		t.Errorf("resources = %#v, want %#v", c["resources"], wantRes)
	}
	expect(t, d, map[string]any{
		"example.com/team":     "platform",
		"prometheus.io/scrape": "false",
		"prometheus.io/port":   "9090",
		"prometheus.io/path":   "/metrics",
	}, "spec", "template", "metadata", "annotations")
}

func TestVersionLabel(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("ab", 32)
	for image, want := range map[string]string{
		"quay.io/echo-operator/echo-server:0.2.0":          "0.2.0",
		"quay.io/echo-operator/echo-server:0.2.0" + digest: "0.2.0",
		"quay.io/echo-operator/echo-server" + digest:       "0.1.0",
		"localhost:5000/echo:" + strings.Repeat("x", 70):   "0.1.0",
		"quay.io/echo-operator/echo-server":                "0.1.0",
		"localhost:5000/echo":                              "0.1.0",
	} {
		objs := render(t, map[string]any{"image": image})
		for i := range objs {
			if got := objs[i].GetLabels()["app.kubernetes.io/version"]; got != want {
				t.Errorf("image %s: %s version label = %q, want %q", image, objs[i].GetKind(), got, want)
			}
		}
	}
}

// TestOperatorTypedValues renders values built from Go types the way the
// operator's value translator builds them, rather than parsed from YAML.
func TestOperatorTypedValues(t *testing.T) {
	objs := render(t, map[string]any{
		"replicas":         int32(2),
		"image":            "quay.io/echo-operator/echo-server:0.1.0",
		"imagePullPolicy":  "IfNotPresent",
		"imagePullSecrets": []any{},
		"message":          "typed",
		"port":             int64(8080),
		"resources": map[string]any{
			"requests": map[string]any{"cpu": "10m", "memory": "32Mi"},
			"limits":   map[string]any{"cpu": "200m", "memory": "64Mi"},
		},
		"service":          map[string]any{"type": "ClusterIP", "port": 80, "annotations": map[string]any{}},
		"ingress":          map[string]any{"enabled": false, "className": "", "host": "", "tlsSecretName": ""},
		"highAvailability": map[string]any{"enabled": false},
		"autoscaling":      map[string]any{"enabled": false, "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 80},
		"persistence":      map[string]any{"enabled": true, "size": "1Gi", "storageClassName": "", "accessModes": []any{"ReadWriteOnce"}},
		"nodeSelector":     map[string]any{},
		"tolerations":      []any{},
		"affinity":         map[string]any{},
		"podAnnotations":   map[string]any{},
		"specGeneration":   int64(4),
	})
	if got, want := kinds(objs), []string{"Deployment", "PersistentVolumeClaim", "Service"}; !slices.Equal(got, want) {
		t.Fatalf("kinds = %v, want %v", got, want)
	}
	d := find(t, objs, "Deployment")
	expect(t, d, int64(2), "spec", "replicas")
	expect(t, d, "4", "metadata", "annotations", "echo.dev/spec-generation")
	expect(t, d, "Recreate", "spec", "strategy", "type")
}

// TestResourcesReplaceDefaults checks that resources are used as given:
// requests without limits render no limits, rather than the defaults'.
func TestResourcesReplaceDefaults(t *testing.T) {
	d := find(t, render(t, values(t, "resources: {requests: {cpu: '2'}}")), "Deployment")
	want := map[string]any{"requests": map[string]any{"cpu": "2"}}
	if got := container(t, d)["resources"]; !reflect.DeepEqual(got, want) {
		t.Errorf("resources = %#v, want %#v", got, want)
	}
}

func TestExtendedResources(t *testing.T) {
	d := find(t, render(t, values(t, `
resources:
  requests: {cpu: 250m, memory: 1Gi, ephemeral-storage: 1Gi, hugepages-2Mi: 64Mi}
  limits: {cpu: 2, memory: 1Gi, example.com/accelerator: 1}
`)), "Deployment")
	want := map[string]any{
		"requests": map[string]any{"cpu": "250m", "memory": "1Gi", "ephemeral-storage": "1Gi", "hugepages-2Mi": "64Mi"},
		"limits":   map[string]any{"cpu": int64(2), "memory": "1Gi", "example.com/accelerator": int64(1)},
	}
	if got := container(t, d)["resources"]; !reflect.DeepEqual(got, want) {
		t.Errorf("resources = %#v, want %#v", got, want)
	}
}

// TestNullPassThroughValues checks that null for a pass-through list or map
// (Helm drops such keys) renders as if it were empty.
func TestNullPassThroughValues(t *testing.T) {
	d := find(t, render(t, map[string]any{
		"imagePullSecrets": nil,
		"resources":        nil,
		"service":          map[string]any{"annotations": nil},
		"nodeSelector":     nil,
		"tolerations":      nil,
		"affinity":         nil,
		"podAnnotations":   nil,
	}), "Deployment")
	for _, k := range []string{"imagePullSecrets", "nodeSelector", "tolerations", "affinity"} {
		expectAbsent(t, d, "spec", "template", "spec", k)
	}
	wantRes := map[string]any{
		"requests": map[string]any{"cpu": "10m", "memory": "32Mi"},
		"limits":   map[string]any{"cpu": "200m", "memory": "64Mi"},
	}
	if got := container(t, d)["resources"]; !reflect.DeepEqual(got, wantRes) {
		t.Errorf("null resources should render defaultResources, got %#v", got)
	}
	expect(t, d, "true", "spec", "template", "metadata", "annotations", "prometheus.io/scrape")
}

// TestEverythingEnabled renders the values file that turns on every feature
// and checks the invariants every object shares.
func TestEverythingEnabled(t *testing.T) {
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "ci", "all-enabled-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const rel, ns = "echo-full", "team-a"
	objs, err := Render(loadChart(t), rel, ns, v.AsMap())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := []string{"Deployment", "HorizontalPodAutoscaler", "Ingress", "PersistentVolumeClaim", "PodDisruptionBudget", "Service"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds = %v, want %v", got, want)
	}
	for i := range objs {
		o := &objs[i]
		wantName := rel
		if o.GetKind() == "PersistentVolumeClaim" {
			wantName = rel + "-data"
		}
		if o.GetName() != wantName || o.GetNamespace() != ns {
			t.Errorf("%s: %s/%s, want %s/%s", o.GetKind(), o.GetNamespace(), o.GetName(), ns, wantName)
		}
		labels := o.GetLabels()
		if labels["app.kubernetes.io/instance"] != rel || labels["app.kubernetes.io/name"] != "echo" ||
			labels["app.kubernetes.io/managed-by"] != "Helm" || labels["app.kubernetes.io/component"] != "server" ||
			labels["app.kubernetes.io/version"] != "0.1.0" || labels["helm.sh/chart"] != "echo-0.1.0" {
			t.Errorf("%s labels = %v", o.GetKind(), labels)
		}
	}
	d := find(t, objs, "Deployment")
	expectAbsent(t, d, "spec", "replicas")
	expect(t, d, "RollingUpdate", "spec", "strategy", "type")
	// The user's affinity replaces the default anti-affinity.
	expectAbsent(t, d, "spec", "template", "spec", "affinity", "podAntiAffinity")
	expect(t, find(t, objs, "HorizontalPodAutoscaler"), int64(3), "spec", "minReplicas")
}

func TestNotes(t *testing.T) {
	ch := loadChart(t)
	notes, err := RenderNotes(ch, releaseName, namespace, nil)
	if err != nil {
		t.Fatalf("RenderNotes: %v", err)
	}
	for _, want := range []string{"port-forward service/" + releaseName, releaseName + "." + namespace + ".svc:80"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES do not mention %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "WARNING") {
		t.Errorf("unexpected warning in default NOTES:\n%s", notes)
	}
	notes, err = RenderNotes(ch, releaseName, namespace, values(t, `
service: {type: LoadBalancer}
ingress: {enabled: true, host: echo.example.com, tlsSecretName: echo-tls}
replicas: 2
persistence: {enabled: true}
`))
	if err != nil {
		t.Fatalf("RenderNotes: %v", err)
	}
	for _, want := range []string{"https://echo.example.com/", "loadBalancer.ingress", "WARNING"} {
		if !strings.Contains(notes, want) {
			t.Errorf("NOTES do not mention %q:\n%s", want, notes)
		}
	}
}

func TestSchemaRejectsBadValues(t *testing.T) {
	tests := map[string]string{
		"negative replicas":           "replicas: -1",
		"fractional replicas":         "replicas: 1.5",
		"string replicas":             "replicas: '3'",
		"unknown top-level key":       "replica: 3",
		"unknown nested key":          "service: {type: ClusterIP, port: 80, nodePort: 30080}",
		"unknown resources key":       "resources: {requests: {cpu: 10m, memroy: 32Mi}}",
		"bad service type":            "service: {type: Foo}",
		"bad pull policy":             "imagePullPolicy: Sometimes",
		"port zero":                   "port: 0",
		"port too large":              "port: 70000",
		"service port too large":      "service: {port: 65536}",
		"image with whitespace":       "image: 'quay.io/echo server:1'",
		"image with empty tag":        "image: 'quay.io/echo-operator/echo-server:'",
		"image with short digest":     "image: quay.io/echo-operator/echo-server@sha256:abc",
		"unknown resource name":       "resources: {limits: {gpu: 1}}",
		"image with uppercase path":   "image: quay.io/Echo/echo-server:1",
		"bad quantity":                "resources: {limits: {memory: lots}}",
		"bad persistence size":        "persistence: {enabled: true, size: big}",
		"bad access mode":             "persistence: {enabled: true, accessModes: [ReadWriteSometimes]}",
		"empty access modes":          "persistence: {enabled: true, accessModes: []}",
		"non-string annotation":       "podAnnotations: {example.com/count: 3}",
		"non-boolean enabled":         "ingress: {enabled: 'yes'}",
		"bad ingress host":            "ingress: {enabled: true, host: 'Echo_Example.com'}",
		"bad toleration effect":       "tolerations: [{key: a, operator: Exists, effect: Sometimes}]",
		"unknown toleration key":      "tolerations: [{key: a, operator: Exists, seconds: 3}]",
		"unknown affinity kind":       "affinity: {nodeAfinity: {}}",
		"pull secret without name":    "imagePullSecrets: [{secret: regcred}]",
		"negative specGeneration":     "specGeneration: -1",
		"zero minReplicas":            "autoscaling: {enabled: true, minReplicas: 0}",
		"zero CPU target":             "autoscaling: {enabled: true, targetCPUUtilizationPercentage: 0}",
		"removed required key":        "message: null",
		"non-object highAvailability": "highAvailability: true",
	}
	ch := loadChart(t)
	for name, doc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Render(ch, releaseName, namespace, values(t, doc))
			if err == nil {
				t.Fatalf("values %q rendered, want a schema error", doc)
			}
			if !strings.Contains(err.Error(), "schema") {
				t.Errorf("values %q: error does not come from the schema: %v", doc, err)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	ch := loadChart(t)
	if _, err := Render(ch, "Not_A_Release", namespace, nil); err == nil {
		t.Error("invalid release name accepted")
	}
	if _, err := Render(nil, releaseName, namespace, nil); err == nil {
		t.Error("nil chart accepted")
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing chart directory loaded")
	}
}

// TestManifestsMatchKubernetesTypes decodes every rendered object strictly
// into its Kubernetes API type, so a misspelt or misplaced field fails.
func TestManifestsMatchKubernetesTypes(t *testing.T) {
	all, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "ci", "all-enabled-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]map[string]any{
		"defaults":    nil,
		"everything":  all.AsMap(),
		"persistence": values(t, "highAvailability: {enabled: true}\npersistence: {enabled: true}\nservice: {type: NodePort}"),
		"ingress":     values(t, "ingress: {enabled: true}\nautoscaling: {enabled: true}"),
	}
	newTyped := map[string]func() any{
		"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
		"v1/Service":                             func() any { return &corev1.Service{} },
		"v1/PersistentVolumeClaim":               func() any { return &corev1.PersistentVolumeClaim{} },
		"networking.k8s.io/v1/Ingress":           func() any { return &networkingv1.Ingress{} },
		"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
		"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	}
	for name, vals := range cases {
		t.Run(name, func(t *testing.T) {
			for _, obj := range render(t, vals) {
				gvk := obj.GetAPIVersion() + "/" + obj.GetKind()
				mk, ok := newTyped[gvk]
				if !ok {
					t.Errorf("unexpected object type %s", gvk)
					continue
				}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, mk(), true); err != nil {
					t.Errorf("%s %s does not match the API type: %v", gvk, obj.GetName(), err)
				}
			}
		})
	}
}

// While quiesced the echo server runs no pod, whatever scales it otherwise,
// and the data claim stays.
func TestQuiesced(t *testing.T) {
	tests := []struct {
		name      string
		values    string
		wantKinds []string
	}{
		{"plain", "replicas: 3", []string{"Deployment", "Service"}},
		{"high availability", "highAvailability: {enabled: true}", []string{"Deployment", "PodDisruptionBudget", "Service"}},
		{"autoscaling leaves out the autoscaler", "autoscaling: {enabled: true, minReplicas: 2}", []string{"Deployment", "Service"}},
		{"persistence keeps the claim", "persistence: {enabled: true}", []string{"Deployment", "PersistentVolumeClaim", "Service"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, values(t, tc.values+"\nquiesced: true"))
			if got := kinds(objs); !slices.Equal(got, tc.wantKinds) {
				t.Fatalf("kinds = %v, want %v", got, tc.wantKinds)
			}
			expect(t, find(t, objs, "Deployment"), int64(0), "spec", "replicas")
		})
	}
}
