package helmreconciler

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
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

// deployedRecordCache is a cache holding one deployed revision of the
// release "web" of echo, with labels (its fingerprints).
func deployedRecordCache(t *testing.T, echo *echov1alpha1.Echo, labels map[string]string) *fakeCache {
	t.Helper()
	rel := renderedRelease(t)
	rel.Labels = labels
	s, err := releaseRecord("sh.helm.release.v1.web.v1", rel, createdAtLabel)
	if err != nil {
		t.Fatal(err)
	}
	s.Namespace = "ns"
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "echo.dev/v1alpha1", Kind: "Echo", Name: echo.Name, UID: echo.UID}}
	testSigner.Sign(s)
	cached, err := releaserecords.CacheTransform(testSigner)(s)
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme).WithObjects(cached.(*corev1.Secret))
	if err := releaserecords.IndexByRelease(context.Background(), builderIndexer{b}); err != nil {
		t.Fatal(err)
	}
	return &fakeCache{FakeInformers: informertest.FakeInformers{Scheme: scheme}, Reader: b.Build()}
}

// The reconciler's dry-run upgrade is answered without Helm when the
// cached deployed revision tells what a render would say: the same
// fingerprint, the deployed release; other values, a release whose
// manifest differs, so the reconciler upgrades. A deployed revision with
// no fingerprint, or of the same values but another chart or renderer (a
// new operator), is rendered: the reconciler upgrades only if the manifest
// changed.
func TestRenderIsSkippedWhenTheFingerprintTells(t *testing.T) {
	ch := loadEchoChart(t)
	vals := translate(t, echov1alpha1.EchoSpec{Message: "hello"})
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u"}}
	dryRun := helmclient.UpgradeOption(func(u *action.Upgrade) error { u.DryRun, u.DryRunOption = true, "server"; return nil })
	newClient := func(deployedLabels func(wanted prints) map[string]string) (*actionClient, *fakeHelm, *release.Release) {
		fh := &fakeHelm{}
		g := &actionClientGetter{inner: fh, expected: newExpectations(), recorder: record.NewFakeRecorder(10), log: logr.Discard()}
		c := &actionClient{ctx: context.Background(), obj: echo, g: g}
		wanted, ok := c.fingerprint(ch, vals)
		if !ok {
			t.Fatal("no fingerprint")
		}
		g.cache = deployedRecordCache(t, echo, deployedLabels(wanted))
		current, err := c.Get("web")
		if err != nil {
			t.Fatal(err)
		}
		return c, fh, current
	}

	t.Run("same fingerprint: the deployed release, unrendered", func(t *testing.T) {
		c, fh, current := newClient(func(wanted prints) map[string]string { return wanted.labels(nil) })
		rel, err := c.Upgrade("web", "ns", ch, vals, dryRun)
		if err != nil || rel.Manifest != current.Manifest || len(fh.upgrades) != 0 {
			t.Fatalf("got %v with %d renders; want the deployed manifest and no render", err, len(fh.upgrades))
		}
	})
	t.Run("other values: an upgrade, unrendered", func(t *testing.T) {
		c, fh, current := newClient(func(prints) map[string]string { return prints{render: "another", values: "other"}.labels(nil) })
		rel, err := c.Upgrade("web", "ns", ch, vals, dryRun)
		if err != nil {
			t.Fatal(err)
		}
		if len(fh.upgrades) != 0 {
			t.Errorf("rendered %d times, want none", len(fh.upgrades))
		}
		if rel.Manifest == current.Manifest || current.Info.Status != release.StatusDeployed {
			t.Error("the reconciler would not upgrade: the dry run's manifest is the deployed one")
		}
		if _, err := c.Upgrade("web", "ns", ch, vals); err != nil || len(fh.upgrades) != 1 {
			t.Errorf("the upgrade: %v, %d Helm upgrades; want it to reach Helm", err, len(fh.upgrades))
		}
	})
	rendered := map[string]func(wanted prints) map[string]string{
		"no fingerprint": func(prints) map[string]string { return nil },
		"the same values, another chart or renderer": func(wanted prints) map[string]string {
			return prints{render: "another", values: wanted.values}.labels(nil)
		},
		"another fingerprint, values unknown (an older operator's revision)": func(prints) map[string]string {
			return map[string]string{releaserecords.FingerprintLabel: "another"}
		},
	}
	for name, labels := range rendered {
		t.Run(name+": rendered", func(t *testing.T) {
			c, fh, _ := newClient(labels)
			if _, err := c.Upgrade("web", "ns", ch, vals, dryRun); err != nil {
				t.Fatal(err)
			}
			if len(fh.upgrades) != 1 {
				t.Errorf("rendered %d times, want once", len(fh.upgrades))
			}
		})
	}
}
