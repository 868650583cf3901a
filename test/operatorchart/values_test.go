package operatorchart

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// deployment is the manager's Deployment among objs.
func deployment(t *testing.T, objs []unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	o := mustFind(t, objs, "Deployment", "echo-operator-controller-manager")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// env is the value of the manager container's variable name.
func env(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// valueCase is values, and a check of the objects they render, of the
// manager's container among them.
type valueCase struct {
	name, values string
	check        func(t *testing.T, objs []unstructured.Unstructured, manager corev1.Container, d *appsv1.Deployment)
}

// valueCases says what each value changes.
var valueCases = []valueCase{
	{"defaults", "", func(t *testing.T, objs []unstructured.Unstructured, m corev1.Container, d *appsv1.Deployment) {
		if m.Image != "quay.io/echo-operator/echo-operator:v0.1.0" || env(m, "RELATED_IMAGE_OPERATOR") != m.Image {
			t.Errorf("image %s, RELATED_IMAGE_OPERATOR %s", m.Image, env(m, "RELATED_IMAGE_OPERATOR"))
		}
		if e := env(m, "RELATED_IMAGE_ECHO"); e != "quay.io/echo-operator/echo-server:v0.1.0" {
			t.Errorf("RELATED_IMAGE_ECHO %s", e)
		}
		if m.ImagePullPolicy != "" {
			t.Errorf("imagePullPolicy %s, want Kubernetes' default", m.ImagePullPolicy)
		}
	}},
	{"replicaCount", "replicaCount: 3", func(t *testing.T, _ []unstructured.Unstructured, _ corev1.Container, d *appsv1.Deployment) {
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas %d", *d.Spec.Replicas)
		}
	}},
	{"resources", "resources: {requests: {cpu: 50m, memory: 256Mi}, limits: {memory: 2Gi}}", func(t *testing.T, _ []unstructured.Unstructured, m corev1.Container, _ *appsv1.Deployment) {
		if m.Resources.Limits.Memory().String() != "2Gi" || m.Resources.Requests.Cpu().String() != "50m" || m.Resources.Limits.Cpu().String() != "500m" {
			t.Errorf("resources %v, want the values' with the default cpu limit", m.Resources)
		}
	}},
	{"images by digest", "{image: {repository: registry.example.com/echo/echo-operator, digest: " + digest + ", pullPolicy: Always}, echoImage: {digest: " + digest + "}}",
		func(t *testing.T, _ []unstructured.Unstructured, m corev1.Container, _ *appsv1.Deployment) {
			if want := "registry.example.com/echo/echo-operator@" + digest; m.Image != want || env(m, "RELATED_IMAGE_OPERATOR") != want {
				t.Errorf("image %s, RELATED_IMAGE_OPERATOR %s, want %s", m.Image, env(m, "RELATED_IMAGE_OPERATOR"), want)
			}
			if want := "quay.io/echo-operator/echo-server@" + digest; env(m, "RELATED_IMAGE_ECHO") != want {
				t.Errorf("RELATED_IMAGE_ECHO %s, want %s", env(m, "RELATED_IMAGE_ECHO"), want)
			}
			if m.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("imagePullPolicy %s", m.ImagePullPolicy)
			}
		}},
	{"image tags", "{image: {tag: v0.2.0}, echoImage: {repository: registry.example.com:5000/echo-server, tag: dev}}",
		func(t *testing.T, _ []unstructured.Unstructured, m corev1.Container, _ *appsv1.Deployment) {
			if m.Image != "quay.io/echo-operator/echo-operator:v0.2.0" || env(m, "RELATED_IMAGE_ECHO") != "registry.example.com:5000/echo-server:dev" {
				t.Errorf("image %s, RELATED_IMAGE_ECHO %s", m.Image, env(m, "RELATED_IMAGE_ECHO"))
			}
		}},
	{"live API off", "liveAPI: {enabled: false}", func(t *testing.T, objs []unstructured.Unstructured, m corev1.Container, _ *appsv1.Deployment) {
		if find(objs, "APIService", "v1alpha1.live.echo.dev") != nil || find(objs, "Service", "echo-operator-live-api") != nil {
			t.Errorf("the live API off renders its APIService or Service: %v", names(objs))
		}
		for _, a := range m.Args {
			if strings.HasPrefix(a, "--live-api-bind-address") {
				t.Errorf("the live API off, the manager has %s", a)
			}
		}
		// Off, the manager removes an APIService it registered before.
		mustFind(t, objs, "ClusterRole", "echo-operator-live-api-role")
	}},
	{"metrics off", "metrics: {enabled: false}", func(t *testing.T, objs []unstructured.Unstructured, m corev1.Container, _ *appsv1.Deployment) {
		if !slices.Contains(m.Args, "--metrics-bind-address=0") {
			t.Errorf("metrics off, the manager's arguments are %v", m.Args)
		}
		for _, n := range []string{"echo-operator-metrics-reader", "echo-operator-metrics-auth-role"} {
			if find(objs, "ClusterRole", n) != nil {
				t.Errorf("metrics off renders ClusterRole %s", n)
			}
		}
		if find(objs, "Service", "echo-operator-controller-manager-metrics-service") != nil {
			t.Error("metrics off renders the metrics Service")
		}
	}},
}

// TestValues checks what each value changes in the rendered objects.
func TestValues(t *testing.T) {
	for _, c := range valueCases {
		t.Run(c.name, func(t *testing.T) {
			objs := render(t, c.values)
			d := deployment(t, objs)
			c.check(t, objs, d.Spec.Template.Spec.Containers[0], d)
		})
	}
}

// TestRefusedValues checks that values.schema.json, or the templates,
// refuse values the chart cannot use, each with a message naming it.
func TestRefusedValues(t *testing.T) {
	for _, c := range []struct{ name, values, says string }{
		{"unknown value", "replicas: 2", "replicas"},
		{"misspelt switch", "monitoring: {serviceMonitor: {enable: true}}", "enable"},
		{"unknown monitoring object", "monitoring: {grafana: {enabled: true}}", "grafana"},
		{"no replica", "replicaCount: 0", "replicaCount"},
		{"replicas as a string", `replicaCount: "2"`, "replicaCount"},
		{"switch as a string", `liveAPI: {enabled: "yes"}`, "enabled"},
		{"digest not sha256", "image: {digest: v0.1.0}", "digest"},
		{"tag in the repository", "image: {repository: quay.io/echo-operator/echo-operator:v0.1.0}", "repository"},
		{"no repository", "echoImage: {repository: \"\"}", "repository"},
		{"pull policy", "image: {pullPolicy: Sometimes}", "pullPolicy"},
		{"no memory limit", "resources: {limits: {memory: null}}", "memory"},
		{"a resource quantity", "resources: {requests: {cpu: lots}}", "cpu"},
		{"a resource of no container", "resources: {limits: {gpu: 1}}", "gpu"},
		{"ServiceMonitor without metrics", "{metrics: {enabled: false}, monitoring: {serviceMonitor: {enabled: true}}}", "metrics.enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := renderErr(t, c.values)
			if err == nil {
				t.Fatalf("values %q rendered", c.values)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("values %q: the error does not name %q: %v", c.values, c.says, err)
			}
		})
	}
}
