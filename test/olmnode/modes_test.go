package olmnode

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// installMode is an install of the operator in an OLM install mode: the
// OperatorGroup of docs/install.md for the mode, in a namespace of its own,
// targeting namespaces of its own.
type installMode struct {
	name string
	// marks pick the mode's OperatorGroup in docs/install.md; replace
	// renames its namespaces (old, new, ...).
	marks   []string
	replace []string
	// namespace is the operator's; targets are those it serves.
	namespace string
	targets   []string
}

// TestInstallModes installs the operator from the catalog in the
// SingleNamespace and MultiNamespace modes side by side, each with its
// OperatorGroup from docs/install.md (AllNamespaces is
// TestCatalogInstallUpgradeUninstall's), and checks that each install's
// pods reconcile the sample Echo in every namespace it targets, and that
// none touches one in a namespace no install targets. An install whose
// OperatorGroup targets its own namespace (OwnNamespace) is refused by OLM,
// as docs/install.md says. Then it uninstalls them.
func TestInstallModes(t *testing.T) {
	ctx := context.Background()
	modes := []installMode{
		{name: "SingleNamespace", marks: []string{"kind: OperatorGroup", "  - team-a\n"},
			replace:   []string{"namespace: echo-operator", "namespace: mode-single", "- team-a", "- mode-single-a"},
			namespace: "mode-single", targets: []string{"mode-single-a"}},
		{name: "MultiNamespace", marks: []string{"kind: OperatorGroup", "  - team-b\n"},
			replace:   []string{"namespace: echo-operator", "namespace: mode-multi", "- team-a", "- mode-multi-a", "- team-b", "- mode-multi-b"},
			namespace: "mode-multi", targets: []string{"mode-multi-a", "mode-multi-b"}},
	}
	const outside, own = "mode-outside", "mode-own"
	namespaces := []string{outside, own}
	for _, m := range modes {
		namespaces = append(namespaces, m.namespace)
		namespaces = append(namespaces, m.targets...)
	}
	explainOnFailure(t, namespaces...)
	ensureCatalogSource(t)
	for _, ns := range uniq(namespaces) {
		run(t, "create", "namespace", ns)
	}
	for _, m := range modes {
		apply(t, docManifest(t, m.marks, m.replace...))
		apply(t, docManifest(t, []string{"kind: Subscription"}, "namespace: echo-operator", "namespace: "+m.namespace))
	}
	// The SingleNamespace OperatorGroup, targeting its own namespace.
	apply(t, docManifest(t, []string{"kind: OperatorGroup", "  - team-a\n"}, "namespace: echo-operator", "namespace: "+own, "- team-a", "- "+own))
	apply(t, docManifest(t, []string{"kind: Subscription"}, "namespace: echo-operator", "namespace: "+own))
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			must(t, waitCSVSucceeded(ctx, m.namespace, csvName(currentVersion), installTimeout))
			checkManagerPods(t, m.namespace, csvName(currentVersion))
			checkTargets(t, m)
			for _, target := range m.targets {
				run(t, "apply", "-n", target, "-f", "config/samples/echo_v1alpha1_echo.yaml")
				waitEchoReady(t, target, 2)
			}
		})
	}

	t.Run("OwnNamespace is refused", func(t *testing.T) {
		must(t, waitCSVRefused(ctx, own, csvName(currentVersion), installTimeout))
	})

	t.Run("no install reconciles an Echo outside its target namespaces", func(t *testing.T) {
		run(t, "apply", "-n", outside, "-f", "config/samples/echo_v1alpha1_echo.yaml")
		// Every install has reconciled its own Echoes; one that watched
		// this namespace would have acted on this one by now too. Another
		// Echo in a target namespace, made after this one, is reconciled
		// first, which orders the check after any event of this one.
		last := modes[len(modes)-1]
		run(t, "scale", "-n", last.targets[0], "echo/"+sample, "--replicas=1")
		waitEchoReady(t, last.targets[0], 1)
		echo := &echov1alpha1.Echo{}
		must(t, k8sClient.Get(ctx, keyOf(outside, sample), echo))
		if len(echo.Status.Conditions) > 0 || len(echo.Finalizers) > 0 {
			t.Errorf("an install reconciled the Echo in %s: status %+v, finalizers %v", outside, echo.Status, echo.Finalizers)
		}
		if _, err := clientset.AppsV1().Deployments(outside).Get(ctx, sample, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the Echo in %s has a Deployment (err %v)", outside, err)
		}
	})

	t.Run("uninstall", func(t *testing.T) {
		for _, m := range modes {
			for _, target := range m.targets {
				run(t, "delete", "-n", target, "echo/"+sample, "--timeout=180s")
			}
			run(t, "delete", "subscription", packageName, "-n", m.namespace)
			run(t, "delete", "csv", csvName(currentVersion), "-n", m.namespace)
			run(t, "delete", "operatorgroup", "echo-operator", "-n", m.namespace)
		}
		run(t, "delete", "subscription", packageName, "-n", own)
		run(t, "delete", "csv", "--ignore-not-found", csvName(currentVersion), "-n", own)
		run(t, "delete", "operatorgroup", "echo-operator", "-n", own)
		for _, ns := range []string{modes[0].namespace, modes[1].namespace, own} {
			// What OLM may leave of each OperatorGroup, as docs/install.md
			// says to delete it.
			run(t, "delete", "clusterrole", "-l", "olm.owner.kind=OperatorGroup,olm.owner=echo-operator,olm.owner.namespace="+ns)
		}
		run(t, "delete", "-n", outside, "echo/"+sample)
		// What OLM leaves, as docs/install.md says to delete it.
		run(t, "delete", "clusterrole", "-l", "olm.owner="+csvName(currentVersion))
		run(t, "delete", "crd", "echoes.echo.dev", "echobackups.echo.dev",
			"echobackupschedules.echo.dev", "echobackuplocations.echo.dev", "echorestores.echo.dev")
		checkNoLiveAPIService(t)
		run(t, append([]string{"delete", "namespace", "--timeout=180s"}, uniq(namespaces)...)...)
		checkNothingLeft(t, uniq(namespaces)...)
		// The last test of the catalog.
		runDocumented(t, documented("delete", "catalogsource", "echo-operator-catalog", "-n", "olm"))
	})
}

// checkTargets checks that OLM gave the install's pods its target
// namespaces, which the manager watches.
func checkTargets(t *testing.T, m installMode) {
	t.Helper()
	got := run(t, "get", "deployment", managerDeployment, "-n", m.namespace,
		"-o", "jsonpath={.spec.template.metadata.annotations.olm\\.targetNamespaces}")
	if want := strings.Join(m.targets, ","); got != want {
		t.Fatalf("the %s install's pods target %q, want %q", m.name, got, want)
	}
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
