package helmreconciler

import (
	"errors"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
)

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
	h, err := c.live()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := h.Uninstall(name, opts...)
	if !errors.Is(err, driver.ErrReleaseNotFound) {
		opmetrics.ReleaseOperation(opmetrics.OperationUninstall, start, err)
	}
	if err == nil {
		c.g.expected.forget(c.releaseKey(name))
		c.g.recorder.Event(c.obj, corev1.EventTypeNormal, echov1alpha1.EventReasonReleaseUninstalled, "Uninstalled the release")
	} else if !errors.Is(err, driver.ErrReleaseNotFound) {
		c.g.log.Error(err, "Uninstalling release failed", "release", name)
	}
	return resp, err
}
