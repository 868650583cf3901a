package chart

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// The Echo and namespace the contract is checked for.
const (
	contractEcho      = "web"
	contractNamespace = "team-a"
)

// renderAllEnabled renders the chart for contractEcho with every optional
// template on (persistence, ingress, autoscaling, high availability with its
// PodDisruptionBudget), and checks that each of them rendered. The release
// is named after the Echo, as the Helm reconciler names it, so the checks
// below hold ReleaseName to that too.
func renderAllEnabled(t *testing.T) []unstructured.Unstructured {
	t.Helper()
	v, err := chartutil.ReadValuesFile(filepath.Join(chartDir, "ci", "all-enabled-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := Render(loadChart(t), contractEcho, contractNamespace, v.AsMap())
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	want := []string{"Deployment", "HorizontalPodAutoscaler", "Ingress", "PersistentVolumeClaim", "PodDisruptionBudget", "Service"}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Fatalf("kinds = %v, want every optional template: %v", got, want)
	}
	return objs
}

// typed converts a rendered object to its Go type.
func typed[T any](t *testing.T, obj *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, out); err != nil {
		t.Fatalf("decoding %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
	return out
}

func TestContractChartName(t *testing.T) {
	ch := loadChart(t)
	if ch.Name() != Name {
		t.Errorf("the chart is named %q, the contract says %q", ch.Name(), Name)
	}
}

func TestContractObjectLabelsAndNames(t *testing.T) {
	for _, o := range renderAllEnabled(t) {
		got := o.GetLabels()
		if got[NameLabel] != Name || got[InstanceLabel] != ReleaseName(contractEcho) {
			t.Errorf("%s labels %v: want %s=%s and %s=%s", o.GetKind(), got, NameLabel, Name, InstanceLabel, ReleaseName(contractEcho))
		}
		for _, key := range []string{ComponentLabel, ManagedByLabel} {
			if got[key] == "" {
				t.Errorf("%s labels %v: want a %s label", o.GetKind(), got, key)
			}
		}
		if !ObjectSelector().Matches(labels.Set(got)) {
			t.Errorf("%s labels %v are not selected by %s", o.GetKind(), got, ObjectSelector())
		}
		wantName := ReleaseName(contractEcho)
		if o.GetKind() == "PersistentVolumeClaim" {
			wantName = DataClaimName(contractEcho)
		}
		if o.GetName() != wantName {
			t.Errorf("%s is named %q, want %q", o.GetKind(), o.GetName(), wantName)
		}
	}
}

func TestContractDeployment(t *testing.T) {
	objs := renderAllEnabled(t)
	d := typed[appsv1.Deployment](t, find(t, objs, "Deployment"))
	want := SelectorLabels(contractEcho)
	if d.Spec.Selector == nil || !maps.Equal(d.Spec.Selector.MatchLabels, want) {
		t.Errorf("Deployment selector = %v, want matchLabels %v", d.Spec.Selector, want)
	}
	podLabels := d.Spec.Template.Labels
	for k, v := range want {
		if podLabels[k] != v {
			t.Errorf("pod template labels %v lack %s=%s", podLabels, k, v)
		}
	}
	var claims []string
	for _, vol := range d.Spec.Template.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil {
			claims = append(claims, vol.PersistentVolumeClaim.ClaimName)
		}
	}
	if !slices.Equal(claims, []string{DataClaimName(contractEcho)}) {
		t.Errorf("Deployment mounts claims %v, want only %s", claims, DataClaimName(contractEcho))
	}
}

func TestContractSelectors(t *testing.T) {
	objs := renderAllEnabled(t)
	want := SelectorLabels(contractEcho)
	svc := typed[corev1.Service](t, find(t, objs, "Service"))
	if !maps.Equal(svc.Spec.Selector, want) {
		t.Errorf("Service selector = %v, want %v", svc.Spec.Selector, want)
	}
	pdb := typed[policyv1.PodDisruptionBudget](t, find(t, objs, "PodDisruptionBudget"))
	if pdb.Spec.Selector == nil || !maps.Equal(pdb.Spec.Selector.MatchLabels, want) {
		t.Errorf("PodDisruptionBudget selector = %v, want matchLabels %v", pdb.Spec.Selector, want)
	}
}

// TestContractReleaseRecords stores releases with Helm's own Secrets
// driver and checks how they are labelled and typed.
func TestContractReleaseRecords(t *testing.T) {
	secrets := fake.NewClientset().CoreV1().Secrets(contractNamespace)
	d := driver.NewSecrets(secrets)
	web := &release.Release{Name: ReleaseName(contractEcho), Namespace: contractNamespace, Version: 3,
		Info: &release.Info{Status: release.StatusDeployed}}
	other := &release.Release{Name: ReleaseName("api"), Namespace: contractNamespace, Version: 1,
		Info: &release.Info{Status: release.StatusFailed}}
	for _, rel := range []*release.Release{web, other} {
		key := "sh.helm.release.v1." + rel.Name + ".v" + strconv.Itoa(rel.Version)
		if err := d.Create(key, rel); err != nil {
			t.Fatalf("storing release %s: %v", key, err)
		}
	}

	list, err := secrets.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("Helm stored %d Secrets, want 2", len(list.Items))
	}
	for _, s := range list.Items {
		checkReleaseRecord(t, &s, web, other)
	}
}

// checkReleaseRecord checks a Secret Helm stored for web or other.
func checkReleaseRecord(t *testing.T, s *corev1.Secret, web, other *release.Release) {
	t.Helper()
	rel, notRel := web, other
	if s.Labels[ReleaseNameLabel] != web.Name {
		rel, notRel = other, web
	}
	set := labels.Set(s.Labels)
	for k, v := range ReleaseRecordLabels(rel.Name) {
		if s.Labels[k] != v {
			t.Errorf("Secret %s labels %v lack %s=%s", s.Name, s.Labels, k, v)
		}
	}
	if got, want := s.Labels[ReleaseStatusLabel], rel.Info.Status.String(); got != want {
		t.Errorf("Secret %s: %s = %q, want %q", s.Name, ReleaseStatusLabel, got, want)
	}
	if got, want := s.Labels[ReleaseVersionLabel], strconv.Itoa(rel.Version); got != want {
		t.Errorf("Secret %s: %s = %q, want %q", s.Name, ReleaseVersionLabel, got, want)
	}
	if string(s.Type) != ReleaseSecretType {
		t.Errorf("Secret %s is of type %q, want %q", s.Name, s.Type, ReleaseSecretType)
	}
	if !ReleaseRecordSelector().Matches(set) {
		t.Errorf("Secret %s labels %v are not selected by %s", s.Name, s.Labels, ReleaseRecordSelector())
	}
	if labels.SelectorFromSet(ReleaseRecordLabels(notRel.Name)).Matches(set) {
		t.Errorf("the record labels of release %s select Secret %s of release %s", notRel.Name, s.Name, rel.Name)
	}
	if ObjectSelector().Matches(set) {
		t.Errorf("Secret %s labels %v are selected as an object of the chart", s.Name, s.Labels)
	}
}
