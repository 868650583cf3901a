package docs_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

const (
	installDoc = "docs/install.md"
	// installerRole is the ClusterRole docs/install.md gives OLM v1's
	// installer ServiceAccount.
	installerRole = "echo-operator-installer"
	bundleDir     = "bundle/manifests"
	csvFile       = "echo-operator.clusterserviceversion.yaml"
)

// TestOLMv1InstallerRoleCoversTheBundle fails when the ClusterRole that
// docs/install.md gives OLM v1's installer lacks a right the bundle grants:
// kube-apiserver lets the installer create a Role or ClusterRole only with
// rights it holds itself, so the install or upgrade would fail on a
// cluster. The real node's OLM v1 test proves the same by installing; this
// check needs no cluster and names what is missing.
func TestOLMv1InstallerRoleCoversTheBundle(t *testing.T) {
	root := reporoot.Must(t)
	installer := installerRoleOf(t, filepath.Join(root, installDoc))
	granted := bundleRules(t, filepath.Join(root, bundleDir))
	if len(granted) == 0 {
		t.Fatalf("%s grants nothing: the check would pass vacuously", bundleDir)
	}
	if covered, missing := validation.Covers(installer.Rules, granted); !covered {
		t.Errorf("ClusterRole %s of %s lacks what the bundle grants (add it there):", installerRole, installDoc)
		for _, rule := range missing {
			t.Errorf("  %s", rule.String())
		}
	}
}

// TestCoversNamesWhatIsMissing checks the comparison the test above relies
// on, with a role that lacks one verb of the bundle's rules.
func TestCoversNamesWhatIsMissing(t *testing.T) {
	owner := []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list"}}}
	servant := []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "delete"}}}
	covered, missing := validation.Covers(owner, servant)
	if covered || len(missing) != 1 || missing[0].Verbs[0] != "delete" {
		t.Fatalf("Covers(%v, %v) = %v, %v; want the delete rule missing", owner, servant, covered, missing)
	}
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// installerRoleOf is the ClusterRole named installerRole in a YAML block of
// the document at path.
func installerRoleOf(t *testing.T, path string) *rbacv1.ClusterRole {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range yamlBlock.FindAllSubmatch(raw, -1) {
		if !bytes.Contains(m[1], []byte("name: "+installerRole)) {
			continue // a block of other objects, or a patch
		}
		roles, err := decodeAll[rbacv1.ClusterRole](m[1])
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, role := range roles {
			if role.Kind == "ClusterRole" && role.Name == installerRole {
				return &role
			}
		}
	}
	t.Fatalf("%s has no ClusterRole %s", path, installerRole)
	return nil
}

// bundleRules are the rules the bundle in dir grants: its CSV's
// permissions and clusterPermissions, and its ClusterRoles.
func bundleRules(t *testing.T, dir string) []rbacv1.PolicyRule {
	t.Helper()
	var csv struct {
		Spec struct {
			Install struct {
				Spec struct {
					Permissions        []struct{ Rules []rbacv1.PolicyRule } `json:"permissions"`
					ClusterPermissions []struct{ Rules []rbacv1.PolicyRule } `json:"clusterPermissions"`
				} `json:"spec"`
			} `json:"install"`
		} `json:"spec"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, csvFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096).Decode(&csv); err != nil {
		t.Fatalf("%s: %v", csvFile, err)
	}
	var rules []rbacv1.PolicyRule
	for _, p := range append(csv.Spec.Install.Spec.Permissions, csv.Spec.Install.Spec.ClusterPermissions...) {
		rules = append(rules, p.Rules...)
	}
	roles, err := filepath.Glob(filepath.Join(dir, "*_clusterrole.yaml"))
	if err != nil || len(roles) == 0 {
		t.Fatalf("no ClusterRole in %s (%v)", dir, err)
	}
	for _, path := range roles {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := decodeAll[rbacv1.ClusterRole](raw)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, role := range decoded {
			rules = append(rules, role.Rules...)
		}
	}
	return rules
}

// decodeAll decodes every document of a YAML stream into a T.
func decodeAll[T any](raw []byte) ([]T, error) {
	var out []T
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}
