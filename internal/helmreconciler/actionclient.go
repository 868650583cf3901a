package helmreconciler

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// actionClientGetter hands the Helm reconciler action clients that:
//   - answer from the cache when the deployed revision was rendered from
//     the same chart and values (see releaserecords.FingerprintLabel),
//     so an unchanged release costs no render and no API request, and one
//     whose values changed is upgraded without a dry-run render first;
//     one whose chart or rendering alone changed (a new operator) is
//     rendered, and upgraded only if its manifest changed;
//   - repair drift against the cached objects (driftrepair.go);
//   - recover releases an interrupted operator left pending
//     (pendingrelease.go);
//   - keep the release until the final backup is done (uninstallgate.go);
//   - record an Event for every install, upgrade and uninstall.
//
// Helm's own clients are only built when a reconcile needs them; they read
// the release's objects from the cache (cachereads.go) and get the
// cluster's capabilities from the process (capabilities.go).
type actionClientGetter struct {
	inner helmclient.ActionClientGetter
	// cache holds the release Secrets (see releaserecords.CacheTransform)
	// and the objects of cachedKinds.
	cache       cache.Cache
	cachedKinds map[schema.GroupVersionKind]bool
	// live reads from the API server; writer writes to it.
	live   client.Reader
	writer client.Writer
	mapper meta.RESTMapper
	scheme *runtime.Scheme
	// revisions the cache has yet to show (see expectations).
	expected *expectations
	// manifests are the objects of the manifests drift repair decoded
	// (manifestmemo.go).
	manifests *manifestMemo
	// charts are the digests of the charts rendered, for fingerprints.
	charts releaserecords.ChartDigests
	// schemas are the compiled values schemas of the charts rendered
	// (valuesschema.go).
	schemas chartSchemas
	// signer signs and verifies the release Secrets.
	signer *releasetrust.Signer
	// skipOpenAPIValidation leaves the validation of rendered objects to
	// the API server, which validates every write anyway: Helm's own check
	// fetches the server's OpenAPI document on every install and upgrade.
	skipOpenAPIValidation bool

	recorder record.EventRecorder
	log      logr.Logger
}

// ActionClientFor implements helmclient.ActionClientGetter.
func (g *actionClientGetter) ActionClientFor(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
	return &actionClient{ctx: ctx, obj: obj, g: g}, nil
}

// actionClient serves one reconcile of obj.
type actionClient struct {
	ctx context.Context
	obj client.Object
	g   *actionClientGetter
	// helm is Helm's action client, built on first use.
	helm helmclient.ActionInterface
	// checked is the values check of the fingerprint checkedFP: a
	// reconcile renders and upgrades with the same values.
	checkedFP string
	checked   valuesCheck
}

// valuesCheck is the outcome of checking values against the chart's
// schema: handled tells whether Helm's own check may be skipped.
type valuesCheck struct {
	handled bool
	err     error
}

// checkValues checks vals against the chart's compiled schema, once per
// reconcile and fingerprint.
func (c *actionClient) checkValues(chrt *chart.Chart, vals map[string]any, fp string, hasFP bool) valuesCheck {
	if hasFP && c.checkedFP == fp {
		return c.checked
	}
	var out valuesCheck
	out.handled, out.err = c.g.schemas.validate(chrt, vals)
	if hasFP {
		c.checkedFP, c.checked = fp, out
	}
	return out
}

// live returns Helm's action client for the object.
func (c *actionClient) live() (helmclient.ActionInterface, error) {
	if c.helm == nil {
		h, err := c.g.inner.ActionClientFor(c.ctx, c.obj)
		if err != nil {
			return nil, err
		}
		c.helm = h
	}
	return c.helm, nil
}

func (c *actionClient) releaseKey(name string) string { return releaseKey(c.obj, name) }

// Config implements helmclient.ActionInterface.
func (c *actionClient) Config() *action.Configuration {
	h, err := c.live()
	if err != nil {
		return nil
	}
	return h.Config()
}

// History implements helmclient.ActionInterface: every revision whole.
// The storage answers a query with summaries of the older revisions
// (releaseStorage.queryRecords); they are read here by key.
func (c *actionClient) History(name string, opts ...helmclient.HistoryOption) ([]*release.Release, error) {
	h, err := c.live()
	if err != nil {
		return nil, err
	}
	rels, err := h.History(name, opts...)
	if err != nil {
		return nil, err
	}
	for i, rel := range rels {
		if !isSummary(rel) {
			continue
		}
		if rels[i], err = h.Config().Releases.Get(rel.Name, rel.Version); err != nil {
			return nil, fmt.Errorf("reading revision %d of release %s: %w", rel.Version, rel.Name, err)
		}
	}
	return rels, nil
}

// cachedDeployed returns the latest revision of a release as the cache
// holds it (see releaserecords.CachedLatest), when that revision is
// deployed: enough to compare, report and repair it.
//
// The cache is trusted only once it shows the revisions this process
// wrote; until then, and whenever the revision is not deployed, the API
// server is asked.
func (c *actionClient) cachedDeployed(name string) (*release.Release, bool) {
	rel, hasManifest, err := releaserecords.CachedLatest(c.ctx, c.g.cache, c.obj.GetNamespace(), name, c.obj.GetUID())
	if err != nil {
		c.g.log.V(1).Info("Reading the release from the API server", "release", name, "reason", err.Error())
		return nil, false
	}
	switch {
	case rel == nil:
		c.g.log.V(1).Info("Reading the release from the API server", "release", name, "reason", "no cached revision of this object")
		return nil, false
	case rel.Info.Status != release.StatusDeployed || !hasManifest:
		c.g.log.V(1).Info("Reading the release from the API server", "release", name, "reason", "latest cached revision is "+string(rel.Info.Status), "revision", rel.Version)
		return nil, false
	case !c.g.expected.seen(c.releaseKey(name), rel.Version):
		c.g.log.V(1).Info("Reading the release from the API server", "release", name, "reason", "the cache has yet to show the latest revision written", "revision", rel.Version)
		return nil, false
	}
	return rel, true
}

// Install implements helmclient.ActionInterface. The release is labelled
// with its fingerprint.
func (c *actionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]any, opts ...helmclient.InstallOption) (*release.Release, error) {
	h, err := c.live()
	if err != nil {
		return nil, err
	}
	fp, hasFP := c.fingerprint(chrt, vals)
	checked := c.checkValues(chrt, vals, fp.render, hasFP)
	opts = append(opts, func(i *action.Install) error {
		if hasFP {
			i.Labels = fp.labels(i.Labels)
		}
		i.DisableOpenAPIValidation = i.DisableOpenAPIValidation || c.g.skipOpenAPIValidation
		i.SkipSchemaValidation = i.SkipSchemaValidation || checked.handled
		return nil
	})
	install := func() (*release.Release, error) {
		if checked.err != nil {
			return nil, checked.err
		}
		return h.Install(name, namespace, chrt, vals, opts...)
	}
	if dryRun(opts, func(a *action.Install) bool { return a.DryRun }) {
		return install()
	}
	start := time.Now()
	rel, err := install()
	if err == nil {
		err = heldWriteError(h, rel)
	}
	opmetrics.ReleaseOperation(opmetrics.OperationInstall, start, err)
	if err != nil {
		c.g.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseInstallFailed, "Installing the release failed: %v", err)
		return rel, err
	}
	c.g.expected.expect(c.releaseKey(name), rel.Version)
	return rel, nil
}

// heldWriteError is the error of writing the record of a revision Helm
// installed: Helm's install only logs it, and a release without its
// record would be installed again on every reconcile.
func heldWriteError(h interface{ Config() *action.Configuration }, rel *release.Release) error {
	cfg := h.Config()
	if cfg == nil || cfg.Releases == nil || rel == nil {
		return nil
	}
	s, ok := cfg.Releases.Driver.(*releaseStorage)
	if !ok {
		return nil
	}
	if err := s.heldWriteError(rel.Name, rel.Version); err != nil {
		return fmt.Errorf("recording revision %d of release %s: %w", rel.Version, rel.Name, err)
	}
	return nil
}

// Upgrade implements helmclient.ActionInterface.
//
// The reconciler renders every reconcile as a dry-run upgrade and upgrades
// only when the manifest changed. When the deployed revision carries the
// fingerprint of this chart and these values, the render would give its
// manifest again: the deployed revision is returned instead, and the
// reconcile moves on to drift repair. When it carries another fingerprint
// and other values, the dry run is answered, unrendered, with a release
// that leads to the upgrade (upgradeWanted), which renders. When only the
// chart or the operator's rendering changed, the dry run renders: an
// operator upgrade that leaves the manifest as it was writes no revision.
func (c *actionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]any, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	fp, hasFP := c.fingerprint(chrt, vals)
	opts = append(opts, func(u *action.Upgrade) error {
		if hasFP {
			u.Labels = fp.labels(u.Labels)
		}
		u.DisableOpenAPIValidation = u.DisableOpenAPIValidation || c.g.skipOpenAPIValidation
		u.SkipSchemaValidation = u.SkipSchemaValidation || c.checkValues(chrt, vals, fp.render, hasFP).handled
		return nil
	})
	if dryRun(opts, func(a *action.Upgrade) bool { return a.DryRun }) {
		return c.render(name, namespace, chrt, vals, fp, hasFP, opts)
	}
	h, err := c.live()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rel, err := c.upgrade(h, name, namespace, chrt, vals, fp, hasFP, opts)
	opmetrics.ReleaseOperation(opmetrics.OperationUpgrade, start, err)
	if err != nil {
		recordRollback(rel, err)
		c.g.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseUpgradeFailed, "Upgrading the release failed: %v", err)
		return rel, err
	}
	c.g.expected.expect(c.releaseKey(name), rel.Version)
	return rel, nil
}

// upgrade runs Helm's upgrade, or dry run, of values the chart's schema
// takes.
func (c *actionClient) upgrade(h helmclient.ActionInterface, name, namespace string, chrt *chart.Chart, vals map[string]any,
	fp prints, hasFP bool, opts []helmclient.UpgradeOption) (*release.Release, error) {
	if err := c.checkValues(chrt, vals, fp.render, hasFP).err; err != nil {
		return nil, err
	}
	return h.Upgrade(name, namespace, chrt, vals, opts...)
}

// recordRollback counts the rollback Helm's action client runs after an
// upgrade that failed once its revision was stored: it then returns that
// revision with the upgrade's error, or no revision and an error saying the
// rollback failed.
func recordRollback(rel *release.Release, err error) {
	switch {
	case rel != nil:
		opmetrics.ReleaseRollback(nil)
	case strings.HasPrefix(err.Error(), rollbackFailedPrefix):
		opmetrics.ReleaseRollback(err)
	}
}

// rollbackFailedPrefix starts the error of an upgrade whose rollback failed
// (helm-operator-plugins' client).
const rollbackFailedPrefix = "rollback failed: "

// render is the dry-run upgrade: answered from the cache when the deployed
// revision's fingerprints tell what a render would say, else rendered by
// Helm.
func (c *actionClient) render(name, namespace string, chrt *chart.Chart, vals map[string]any, fp prints, hasFP bool, opts []helmclient.UpgradeOption) (*release.Release, error) {
	deployed, cached := c.cachedDeployed(name)
	if hasFP && cached {
		switch deployedFP := deployed.Labels[releaserecords.FingerprintLabel]; {
		case deployedFP == fp.render:
			return deployed, nil
		case deployedFP == "":
			c.g.log.V(1).Info("Rendering the release", "release", name, "reason", "the deployed revision has no fingerprint")
		case valuesChanged(deployed, fp):
			c.g.log.V(1).Info("Upgrading without a dry run", "release", name, "reason", "the values changed",
				"deployed", deployedFP, "wanted", fp.render)
			return upgradeWanted(deployed), nil
		default:
			// A new chart or operator often renders the same manifest:
			// only a render tells, and an unchanged one is adopted
			// below, without a new revision.
			c.g.log.V(1).Info("Rendering the release", "release", name, "reason", "the chart or the operator's rendering changed, not the values",
				"deployed", deployedFP, "wanted", fp.render)
		}
	}
	h, err := c.live()
	if err != nil {
		return nil, err
	}
	rel, err := c.upgrade(h, name, namespace, chrt, vals, fp, hasFP, opts)
	if err != nil {
		// A failed render is what stops the release from moving on.
		c.g.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseUpgradeFailed, "Rendering the release failed: %v", err)
		return rel, err
	}
	// A render that changes the manifest leads to an upgrade, which labels
	// the new revision; only an unchanged one is worth adopting.
	if hasFP && (!cached || deployed.Manifest == rel.Manifest) {
		c.adopt(h, name, rel.Manifest, fp)
	}
	return rel, nil
}

// valuesChanged reports whether the deployed revision was rendered with
// other values than fp's. A revision an older operator wrote without the
// values label counts as unchanged: a render is cheaper than an upgrade
// that was not needed, which writes a revision.
func valuesChanged(deployed *release.Release, fp prints) bool {
	v := deployed.Labels[releaserecords.ValuesLabel]
	return v != "" && v != fp.values
}

// upgradeWanted stands for the render of values other than those of the
// deployed revision, without rendering: the reconciler only compares a dry
// run's manifest with the deployed one's to choose between an upgrade and
// nothing (helm-operator-plugins' getReleaseState), and changed values
// are an upgrade (values no template reads are rare enough to cost one).
// The upgrade that follows renders for real; nothing else reads a dry
// run's result.
func upgradeWanted(deployed *release.Release) *release.Release {
	out := *deployed
	info := *deployed.Info
	info.Description = notRenderedDescription
	out.Info = &info
	out.Manifest = deployed.Manifest + notRenderedManifest
	return &out
}

const (
	notRenderedDescription = "Not rendered: the values changed"
	// notRenderedManifest makes the stand-in's manifest differ from any
	// deployed one.
	notRenderedManifest = "\n# not rendered: the values changed\n"
)

// adopt labels the deployed revision with fp when the render gives its
// manifest again: a release deployed before fingerprints, by an older
// operator or from an older chart, then takes the cached path from the
// next reconcile on, without an upgrade: one write of its record, no new
// revision. A failure only costs another render later.
func (c *actionClient) adopt(h helmclient.ActionInterface, name, manifest string, fp prints) {
	cur, err := h.Get(name)
	if err != nil || cur.Info == nil || cur.Info.Status != release.StatusDeployed ||
		cur.Manifest != manifest || cur.Labels[releaserecords.FingerprintLabel] == fp.render {
		return
	}
	cur.Labels = fp.labels(cur.Labels)
	if err := h.Config().Releases.Update(cur); err != nil {
		c.g.log.V(1).Info("Could not label the release with its fingerprint", "release", name, "error", err.Error())
		return
	}
	c.g.expected.expect(c.releaseKey(name), cur.Version)
}

// prints are the fingerprints of a render: of all it reads
// (releaserecords.FingerprintLabel) and of its values alone
// (releaserecords.ValuesLabel).
type prints struct{ render, values string }

// labels returns labels with the fingerprints added.
func (p prints) labels(labels map[string]string) map[string]string {
	return withLabel(withLabel(labels, releaserecords.FingerprintLabel, p.render), releaserecords.ValuesLabel, p.values)
}

// fingerprint of a render; ok is false if the values cannot be encoded,
// which only costs the cached path.
func (c *actionClient) fingerprint(chrt *chart.Chart, vals map[string]any) (prints, bool) {
	var p prints
	digest, err := c.g.charts.Of(chrt)
	if err == nil {
		p.render, err = releaserecords.Fingerprint(digest, vals)
	}
	if err == nil {
		p.values, err = releaserecords.ValuesFingerprint(vals)
	}
	if err != nil {
		c.g.log.V(1).Info("Rendering without a fingerprint", "error", err.Error())
		return prints{}, false
	}
	return p, true
}

// dryRun reports whether options configure a dry run, by applying them to a
// scratch action.
func dryRun[A any, O ~func(*A) error](opts []O, isDryRun func(*A) bool) bool {
	scratch := new(A)
	for _, o := range opts {
		if err := o(scratch); err != nil {
			return false
		}
	}
	return isDryRun(scratch)
}

func withLabel(labels map[string]string, key, value string) map[string]string {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	out[key] = value
	return out
}
