package cachetrim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

func labelled(n int) map[string]string {
	l := map[string]string{"app.kubernetes.io/managed-by": "echo-operator", "app.kubernetes.io/name": "echo"}
	for i := range n {
		l["echo.dev/x"+strings.Repeat("y", i%50)+string(rune('a'+i%26))] = "v"
		l["team.example.com/k"+string(rune('a'+i%26))+strings.Repeat("z", i%40)] = "v"
	}
	return l
}

func configMap(dataBytes int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team", Name: "cm", UID: "u1", ResourceVersion: "7", Labels: labelled(0),
			Annotations:     map[string]string{"big": strings.Repeat("a", dataBytes)},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			OwnerReferences: []metav1.OwnerReference{{Kind: "EchoBackup", Name: "b", UID: "o1", Controller: ptr.To(true)}, {Kind: "Other", Name: "x", UID: "o2"}},
		},
		Data: map[string]string{"config.json": strings.Repeat("d", dataBytes)},
	}
}

func TestBounded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		obj      runtime.Object
		wantStub bool
	}{
		{"a small object is kept whole", configMap(100), false},
		{"an object over the bound becomes a stub", configMap(MaxObjectBytes), true},
		{"a Deployment of 1 MiB becomes a stub", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Labels: labelled(500)},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "c", Env: []corev1.EnvVar{{Name: "X", Value: strings.Repeat("e", 1<<20)}}}}}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Bounded(MaxObjectBytes)(tc.obj.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			obj := out.(runtime.Object)
			if IsStub(obj) != tc.wantStub {
				t.Fatalf("stub = %v, want %v", IsStub(obj), tc.wantStub)
			}
			if got := obj.(sizer).Size(); got > MaxObjectBytes+4096 {
				t.Errorf("the cache keeps %d bytes", got)
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok && !tc.wantStub && len(cm.ManagedFields) != 0 {
				t.Error("managed fields are kept")
			}
		})
	}
}

func TestStubKeepsIdentity(t *testing.T) {
	in := configMap(1 << 20)
	in.Labels = labelled(200)
	now := metav1.Now()
	in.DeletionTimestamp = &now
	out, err := MetadataOnly()(in.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	cm := out.(*corev1.ConfigMap)
	if cm.Name != "cm" || cm.Namespace != "team" || cm.UID != "u1" || cm.ResourceVersion != "7" || cm.DeletionTimestamp == nil {
		t.Errorf("identity lost: %+v", cm.ObjectMeta)
	}
	if len(cm.Data) != 0 || len(cm.ManagedFields) != 0 {
		t.Error("the stub keeps data or managed fields")
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != "o1" {
		t.Errorf("owner references = %v, want the controller's only", cm.OwnerReferences)
	}
	if len(cm.Labels) > maxStubLabels || cm.Labels["app.kubernetes.io/managed-by"] != "echo-operator" {
		t.Errorf("labels = %v, want at most %d, the operator's among them", cm.Labels, maxStubLabels)
	}
	for k := range cm.Labels {
		if strings.HasPrefix(k, "team.example.com/") {
			t.Errorf("the stub keeps a foreign label %s", k)
		}
	}
	if again, _ := MetadataOnly()(cm); again.(*corev1.ConfigMap) != cm {
		t.Error("a stub is transformed again")
	}
	if IsStub(in) {
		t.Error("a whole object passes for a stub")
	}
}

// TestChartObjectsFitTheBound: every object the chart renders, with every
// feature on, is far below MaxObjectBytes, so the cache keeps them whole.
func TestChartObjectsFitTheBound(t *testing.T) {
	root := reporoot.Must(t)
	ch, err := chart.Load(filepath.Join(root, "helm-charts", "echo"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "helm-charts", "echo", "ci", "all-enabled-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	objs, err := chart.Render(ch, "echo-sample", "team", values)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		typed, err := clientgoscheme.Scheme.New(u.GroupVersionKind())
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			t.Fatal(err)
		}
		if size := typed.(sizer).Size(); size > MaxObjectBytes/4 {
			t.Errorf("%s %s is %d bytes, too close to the cache's bound of %d", u.GetKind(), u.GetName(), size, MaxObjectBytes)
		}
	}
}
