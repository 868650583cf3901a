package olmnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/clusteruser"
)

// olmNamespace is where OLM runs, and the catalogs of the cluster live.
const olmNamespace = "olm"

// olmInstallTimeout bounds each step of OLM's install.
const olmInstallTimeout = 5 * time.Minute

// installOLM installs OLM as its releases do, with the images built here
// in place of the release's: it renders OLM's chart with the values of its
// upstream release (as OLM's `make package` does), then follows its
// install script: the CRDs, then OLM's operators, then waits for them and
// for the package server, which OLM installs itself as a CSV. The
// release's catalog of community operators is left out: it is on quay.io
// alone.
func installOLM(ctx context.Context) error {
	crds, manifests, err := olmManifests(ctx)
	if err != nil {
		return err
	}
	steps := [][]string{
		{"create", "-f", crds},
		{"wait", "--for=condition=Established", "-f", crds, "--timeout=60s"},
		{"create", "-f", manifests},
		{"rollout", "status", "-n", olmNamespace, "deployment/olm-operator", "--timeout=5m"},
		{"rollout", "status", "-n", olmNamespace, "deployment/catalog-operator", "--timeout=5m"},
	}
	for _, args := range steps {
		if out, err := kubectl.Run(args...); err != nil {
			return fmt.Errorf("kubectl %s: %w\n%s\n%s", strings.Join(args, " "), err, out, describePods(olmNamespace))
		}
	}
	if err := waitCSVSucceeded(ctx, olmNamespace, "packageserver", olmInstallTimeout); err != nil {
		return fmt.Errorf("OLM's package server: %w\n%s", err, describePods(olmNamespace))
	}
	return nil
}

// olmManifests renders OLM's release with `helm template` and writes its
// CRDs and its other objects, but for the community catalog, to two files.
func olmManifests(ctx context.Context) (crds, manifests string, err error) {
	release := filepath.Join(os.Getenv("OLM_DIR"), "release")
	values := strings.Join([]string{"olm.image.ref=" + images.OLM, "catalog.image.ref=" + images.OLM,
		"package.image.ref=" + images.OLM, "catalog.opmImageArgs=--opmImage=" + images.OPM}, ",")
	cmd := exec.CommandContext(ctx, os.Getenv("HELM"), "template", "-n", olmNamespace, "-f", filepath.Join(release, "values.yaml"),
		"--include-crds", "--set", values, filepath.Join(release, "chart"))
	out, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("rendering OLM's chart: %w: %s", err, stderrOf(err))
	}
	var crdDocs, otherDocs []string
	for _, doc := range strings.Split(string(out), "\n---\n") {
		switch {
		case strings.Contains(doc, "\nkind: CustomResourceDefinition\n"):
			crdDocs = append(crdDocs, doc)
		case strings.Contains(doc, "\nkind: CatalogSource\n"):
		default:
			otherDocs = append(otherDocs, doc)
		}
	}
	if len(crdDocs) == 0 || !strings.Contains(string(out), "--opmImage="+images.OPM) {
		return "", "", fmt.Errorf("OLM's chart rendered no CRDs or no opm image:\n%s", out)
	}
	crds, manifests = filepath.Join(workDir, "olm-crds.yaml"), filepath.Join(workDir, "olm.yaml")
	return crds, manifests, errors.Join(os.WriteFile(crds, []byte(strings.Join(crdDocs, "\n---\n")), 0o644),
		os.WriteFile(manifests, []byte(strings.Join(otherDocs, "\n---\n")), 0o644))
}

// stderrOf is the standard error of a command that exited with err.
func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(exit.Stderr)
	}
	return ""
}

// The kinds of OLM the tests read.
var (
	csvKind         = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	installPlanKind = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "InstallPlan"}
	catalogKind     = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "CatalogSource"}
)

// get reads the object of kind gvk, or returns nil when there is none.
func get(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj)
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	if err != nil {
		return nil, nil
	}
	return obj, nil
}

// str is the string at path in obj.
func str(obj *unstructured.Unstructured, path ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, path...)
	return s
}

// poll checks cond every second until it holds or timeout passes; last
// says what was seen last, for the error.
func poll(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string, error)) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		if err == nil || seen != "" {
			// An error at the deadline says nothing of what was seen.
			last = seen
		}
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("%s: %w (last seen: %s)", what, err, last)
	}
	return nil
}

// waitCSVSucceeded waits for the CSV to reach the phase Succeeded; it
// fails at once in the phase Failed.
func waitCSVSucceeded(ctx context.Context, namespace, name string, timeout time.Duration) error {
	const phase = "Succeeded"
	return poll(ctx, timeout, fmt.Sprintf("CSV %s/%s in phase %s", namespace, name, phase), func(ctx context.Context) (bool, string, error) {
		csv, err := get(ctx, csvKind, namespace, name)
		if err != nil || csv == nil {
			return false, "no CSV", err
		}
		seen := str(csv, "status", "phase") + ": " + str(csv, "status", "message")
		if str(csv, "status", "phase") == "Failed" {
			return false, seen, fmt.Errorf("the CSV failed: %s", seen)
		}
		return str(csv, "status", "phase") == phase, seen, nil
	})
}

// waitCSVRefused waits for OLM to fail the CSV for its OperatorGroup: the
// operator does not support the install mode that group asks for.
func waitCSVRefused(ctx context.Context, namespace, name string, timeout time.Duration) error {
	return poll(ctx, timeout, fmt.Sprintf("CSV %s/%s refused for its OperatorGroup", namespace, name), func(ctx context.Context) (bool, string, error) {
		csv, err := get(ctx, csvKind, namespace, name)
		if err != nil || csv == nil {
			return false, "no CSV", err
		}
		seen := str(csv, "status", "phase") + " (" + str(csv, "status", "reason") + "): " + str(csv, "status", "message")
		if str(csv, "status", "phase") == "Succeeded" {
			return false, seen, fmt.Errorf("the CSV succeeded in an unsupported install mode: %s", seen)
		}
		return str(csv, "status", "reason") == "UnsupportedOperatorGroup", seen, nil
	})
}

// describePods tells the state of namespace's pods.
func describePods(namespace string) string {
	return clusteruser.DescribePods(context.Background(), clientset, namespace)
}

// explainOnFailure prints, when the test fails, the state of the pods of
// each namespace, OLM's included.
func explainOnFailure(t *testing.T, namespaces ...string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, ns := range append(namespaces, olmNamespace) {
			t.Logf("pods in %s:\n%s", ns, describePods(ns))
		}
	})
}

// run runs kubectl as a user types it and fails the test on error.
func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl.Run(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// apply runs `kubectl apply -f -` with manifest on its input.
func apply(t *testing.T, manifest string) {
	t.Helper()
	if out, err := kubectl.RunIn(manifest, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v\n%s\n%s", err, out, manifest)
	}
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// keyOf is the key of the object name in namespace.
func keyOf(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}
