package helmreconciler

import (
	"fmt"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
)

// Get returns the latest release: from the cache when its latest revision
// is deployed (see cachedDeployed), else from the API server. A release
// left pending-install, pending-upgrade or pending-rollback is first marked
// failed.
//
// Helm marks a release pending for the length of one operation, and an
// operation on a release only ever runs inside one reconcile of its object,
// which the work queue never runs twice at once. So a release that is
// pending when a reconcile starts was left so by a process that died (or
// lost leadership) mid-operation, and waiting cannot clear it. Marking it
// failed lets the reconciler upgrade over it: nothing is deleted, so no
// data is lost. This operator writes no pending record (recordwrites.go):
// the pending records found are those of an earlier version.
func (c *actionClient) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	if len(opts) == 0 {
		if rel, ok := c.cachedDeployed(name); ok {
			return rel, nil
		}
	}
	h, err := c.live()
	if err != nil {
		return nil, err
	}
	rel, err := h.Get(name, opts...)
	if err != nil || rel.Info == nil || !rel.Info.Status.IsPending() {
		return rel, err
	}
	if err := c.recoverPending(h, rel); err != nil {
		return nil, err
	}
	return rel, nil
}

// recoverPending marks a release an interrupted operator left pending
// failed, and records an Event saying so.
func (c *actionClient) recoverPending(h helmclient.ActionInterface, rel *release.Release) error {
	was := rel.Info.Status
	rel.SetStatus(release.StatusFailed, fmt.Sprintf("Interrupted while %s; marked failed by echo-operator to retry", was))
	if err := h.Config().Releases.Update(rel); err != nil {
		return fmt.Errorf("marking interrupted release %s revision %d failed: %w", rel.Name, rel.Version, err)
	}
	opmetrics.ReleaseRecovered()
	c.g.log.Info("Recovered interrupted release", "release", rel.Name, "revision", rel.Version, "was", was)
	c.g.recorder.Eventf(c.obj, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseRecovered,
		"Release revision %d was left %s by an interrupted operator; marked it failed so it can be retried", rel.Version, was)
	return nil
}
