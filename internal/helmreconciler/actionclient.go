package helmreconciler

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// actionClientGetter hands the Helm reconciler action clients that recover
// releases an interrupted operator left pending, and that record an Event
// for every install, upgrade and uninstall.
type actionClientGetter struct {
	inner    helmclient.ActionClientGetter
	recorder record.EventRecorder
	log      logr.Logger
}

// ActionClientFor implements helmclient.ActionClientGetter.
func (g *actionClientGetter) ActionClientFor(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
	ac, err := g.inner.ActionClientFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	return &actionClient{ActionInterface: ac, obj: obj, recorder: g.recorder, log: g.log}, nil
}

type actionClient struct {
	helmclient.ActionInterface
	obj      client.Object
	recorder record.EventRecorder
	log      logr.Logger
}

// Get returns the latest release. A release left pending-install,
// pending-upgrade or pending-rollback is first marked failed.
//
// Helm marks a release pending for the length of one operation, and an
// operation on a release only ever runs inside one reconcile of its object,
// which the work queue never runs twice at once. So a release that is
// pending when a reconcile starts was left so by a process that died (or
// lost leadership) mid-operation, and waiting cannot clear it. Marking it
// failed lets the reconciler upgrade over it: nothing is deleted, so no
// data is lost.
func (c *actionClient) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	rel, err := c.ActionInterface.Get(name, opts...)
	if err != nil || rel.Info == nil || !rel.Info.Status.IsPending() {
		return rel, err
	}
	if err := c.recoverPending(rel); err != nil {
		return nil, err
	}
	return rel, nil
}

func (c *actionClient) recoverPending(rel *release.Release) error {
	was := rel.Info.Status
	rel.SetStatus(release.StatusFailed, fmt.Sprintf("Interrupted while %s; marked failed by echo-operator to retry", was))
	if err := c.Config().Releases.Update(rel); err != nil {
		return fmt.Errorf("marking interrupted release %s revision %d failed: %w", rel.Name, rel.Version, err)
	}
	c.log.Info("Recovered interrupted release", "release", rel.Name, "revision", rel.Version, "was", was)
	c.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseRecovered,
		"Release revision %d was left %s by an interrupted operator; marked it failed so it can be retried", rel.Version, was)
	return nil
}

// Install implements helmclient.ActionInterface.
func (c *actionClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]any, opts ...helmclient.InstallOption) (*release.Release, error) {
	rel, err := c.ActionInterface.Install(name, namespace, chrt, vals, opts...)
	if dryRun(opts, func(a *action.Install) bool { return a.DryRun }) {
		return rel, err
	}
	if err != nil {
		c.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseInstallFailed, "Installing the release failed: %v", err)
		return rel, err
	}
	c.recorder.Eventf(c.obj, corev1.EventTypeNormal, echov1alpha1.EventReasonReleaseInstalled,
		"Installed release revision %d of chart %s", rel.Version, chartName(rel))
	return rel, nil
}

// Upgrade implements helmclient.ActionInterface.
func (c *actionClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]any, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, opts...)
	if dryRun(opts, func(a *action.Upgrade) bool { return a.DryRun }) {
		if err != nil {
			// The reconciler renders every change as a dry run first: a
			// failure here is what stops the release from moving on.
			c.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseUpgradeFailed, "Rendering the release failed: %v", err)
		}
		return rel, err
	}
	if err != nil {
		c.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseUpgradeFailed, "Upgrading the release failed: %v", err)
		return rel, err
	}
	c.recorder.Eventf(c.obj, corev1.EventTypeNormal, echov1alpha1.EventReasonReleaseUpgraded,
		"Upgraded release to revision %d of chart %s", rel.Version, chartName(rel))
	return rel, nil
}

// errFinalBackupPending holds an uninstall back until the final backup is done.
var errFinalBackupPending = errors.New("waiting for the final backup before uninstalling the release")

// Uninstall implements helmclient.ActionInterface. While the object still
// carries the final backup finalizer, the release stays: the backup needs
// the Echo's data and pods, and the Helm reconciler would otherwise
// uninstall as soon as deletion starts.
func (c *actionClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	if controllerutil.ContainsFinalizer(c.obj, echov1alpha1.FinalBackupFinalizer) {
		return nil, errFinalBackupPending
	}
	resp, err := c.ActionInterface.Uninstall(name, opts...)
	if err == nil {
		c.recorder.Event(c.obj, corev1.EventTypeNormal, echov1alpha1.EventReasonReleaseUninstalled, "Uninstalled the release")
	} else if !errors.Is(err, driver.ErrReleaseNotFound) {
		c.log.Error(err, "Uninstalling release failed", "release", name)
	}
	return resp, err
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

func chartName(rel *release.Release) string {
	if rel == nil || rel.Chart == nil || rel.Chart.Metadata == nil {
		return "unknown"
	}
	return rel.Chart.Metadata.Name + "-" + rel.Chart.Metadata.Version
}
