package app

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// TestLeaderElectionRoleNamesTheLease: the leader election Role reaches
// the operator's own Lease and no other (OLM makes it a ClusterRole in
// AllNamespaces mode), and it names the Lease the manager takes.
func TestLeaderElectionRoleNamesTheLease(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(reporoot.Must(t), "config", "rbac", "leader_election_role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{}
	if err := yaml.Unmarshal(raw, role); err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, rule := range role.Rules {
		if !slices.Contains(rule.Resources, "leases") {
			continue
		}
		if len(rule.ResourceNames) == 0 {
			if !slices.Equal(rule.Verbs, []string{"create"}) {
				t.Errorf("a Lease rule without resourceNames grants %v; only create may go unnamed", rule.Verbs)
			}
			continue
		}
		if !slices.Equal(rule.ResourceNames, []string{leaderElectionID}) {
			t.Errorf("a Lease rule names %v, want only %s", rule.ResourceNames, leaderElectionID)
		}
		named = append(named, rule.Verbs...)
	}
	for _, verb := range []string{"get", "update"} {
		if !slices.Contains(named, verb) {
			t.Errorf("the Role does not grant %s on the Lease %s, which leader election needs", verb, leaderElectionID)
		}
	}
}
