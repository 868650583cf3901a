package olmnode

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds of OLM v1 the test reads.
var (
	clusterCatalogKind   = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterCatalog"}
	clusterExtensionKind = schema.GroupVersionKind{Group: "olm.operatorframework.io", Version: "v1", Kind: "ClusterExtension"}
)

// clusterCatalogName is the ClusterCatalog of docs/install.md.
const clusterCatalogName = "echo-operator-catalog"

// echoCRDs are the bundle's CRDs.
var echoCRDs = []string{"echoes.echo.dev", "echobackups.echo.dev", "echobackupschedules.echo.dev",
	"echobackuplocations.echo.dev", "echorestores.echo.dev"}

// TestOLMv1ClusterExtension installs OLM v1 and follows docs/install.md's
// section on it: a ClusterCatalog of the catalog image, which catalogd
// pulls and serves and its webhook labels, then a ClusterExtension of the
// package, installed with the installer ServiceAccount of the
// documentation, whose operator runs in two ready pods for all namespaces
// and reconciles the sample Echo with its pods serving; then the uninstall
// by deleting the ClusterExtension, which removes the operator and its
// CRDs. It starts from no CRDs of the operator, which OLM v1 would not
// adopt: TestInstallModes leaves them, as OLM does.
func TestOLMv1ClusterExtension(t *testing.T) {
	ctx := context.Background()
	const ns, team = "echo-operator", "team-a"
	explainOLMv1OnFailure(t, ns, team)
	run(t, append([]string{"delete", "crd", "--ignore-not-found", "--timeout=180s"}, echoCRDs...)...)
	installOLMv1(t)

	apply(t, docManifest(t, []string{"kind: ClusterCatalog"},
		"registry.example.com/echo/echo-operator-catalog:v0.1.0", images.Catalog))
	runDocumented(t, documented("wait", "--for=condition=Serving", "clustercatalog/echo-operator-catalog", "--timeout=5m"))
	runDocumented(t, documented("get", "clustercatalog"))
	catalog, err := get(ctx, clusterCatalogKind, "", clusterCatalogName)
	must(t, err)
	if got := catalog.GetLabels()["olm.operatorframework.io/metadata.name"]; got != clusterCatalogName {
		t.Fatalf("catalogd's webhook labelled the ClusterCatalog %q, want its name", got)
	}

	apply(t, docManifest(t, []string{"kind: ServiceAccount", "kind: ClusterRole\n", "kind: ClusterRoleBinding"}))
	apply(t, docManifest(t, []string{"kind: ClusterExtension"}))
	runDocumented(t, documented("wait", "--for=condition=Installed", "clusterextension/echo-operator", "--timeout=5m"))
	runDocumented(t, documented("get", "clusterextension", "echo-operator"))
	ext, err := get(ctx, clusterExtensionKind, "", packageName)
	must(t, err)
	if got := str(ext, "status", "install", "bundle", "name"); got != csvName(currentVersion) {
		t.Fatalf("the ClusterExtension installed %q, want the channel's head %s", got, csvName(currentVersion))
	}
	// AllNamespaces: an empty list of target namespaces.
	checkOperatorPods(t, ns, "the ClusterExtension", func(annotations map[string]string) bool {
		targets, ok := annotations["olm.targetNamespaces"]
		return ok && targets == ""
	})

	run(t, "create", "namespace", team)
	run(t, "apply", "-n", team, "-f", "config/samples/echo_v1alpha1_echo.yaml")
	waitEchoReady(t, team, 2)

	t.Run("uninstall", func(t *testing.T) {
		run(t, "delete", "-n", team, "echo/"+sample, "--timeout=180s")
		runDocumented(t, documented("delete", "clusterextension", "echo-operator"))
		run(t, "wait", "-n", ns, "--for=delete", "deployment/"+managerDeployment, "--timeout=180s")
		crds := []string{"wait", "--for=delete", "--timeout=180s"}
		for _, crd := range echoCRDs {
			crds = append(crds, "crd/"+crd)
		}
		run(t, crds...)
		checkNoLiveAPIService(t)
		runDocumented(t, documented("delete", "clustercatalog", "echo-operator-catalog"))
		runDocumented(t, documented("delete", "clusterrolebinding", "echo-operator-installer"))
		runDocumented(t, documented("delete", "clusterrole", "echo-operator-installer"))
		run(t, "delete", "namespace", ns, team, "--timeout=180s")
		checkNothingLeft(t, ns, team)
	})
}
