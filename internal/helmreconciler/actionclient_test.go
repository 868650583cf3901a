package helmreconciler

import (
	"testing"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
)

func TestDryRunDetection(t *testing.T) {
	isDryRun := func(a *action.Upgrade) bool { return a.DryRun }
	serverDryRun := helmclient.UpgradeOption(func(u *action.Upgrade) error { u.DryRun = true; u.DryRunOption = "server"; return nil })
	force := helmclient.UpgradeOption(func(u *action.Upgrade) error { u.Force = true; return nil })

	if dryRun([]helmclient.UpgradeOption{force}, isDryRun) {
		t.Error("a forced upgrade is not a dry run")
	}
	if !dryRun([]helmclient.UpgradeOption{force, serverDryRun}, isDryRun) {
		t.Error("the reconciler's server-side dry run was not recognised")
	}
	if dryRun[action.Upgrade, helmclient.UpgradeOption](nil, isDryRun) {
		t.Error("no options is no dry run")
	}
}
