package helmreconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/finalbackup"
	opmetrics "github.com/echo-operator/echo-operator/internal/metrics"
)

// errFinalBackupPending holds an uninstall back until the final backup is done.
var errFinalBackupPending = errors.New("waiting for the final backup before uninstalling the release")

// Uninstall implements helmclient.ActionInterface. While the Echo's final
// backup is pending, the release stays: the backup needs the Echo's data
// and pods, and the Helm reconciler would otherwise uninstall as soon as
// deletion starts. The Helm reconciler's finalizer keeps the Echo meanwhile.
func (c *actionClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	pending, err := finalBackupPending(c.ctx, c.g.cache, c.obj)
	if err != nil {
		return nil, err
	}
	if pending {
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
	gone := err == nil || errors.Is(err, driver.ErrReleaseNotFound)
	if gone {
		// Records written by a failed install that Helm's client
		// uninstalled are expected too (recordwrites.go).
		c.g.expected.forget(c.releaseKey(name))
	}
	if err == nil {
		c.g.recorder.Event(c.obj, corev1.EventTypeNormal, echov1alpha1.EventReasonReleaseUninstalled, "Uninstalled the release")
	} else if !gone {
		c.g.log.Error(err, "Uninstalling release failed", "release", name)
	}
	return resp, err
}

// finalBackupPending says whether obj, when it is an Echo, waits for its
// final backup. The spec it reads is the one the Echo had when it was
// deleted, so a final backup turned on just before the delete counts.
func finalBackupPending(ctx context.Context, r client.Reader, obj client.Object) (bool, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != echoGVK {
		return false, nil
	}
	echo := &echov1alpha1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, echo); err != nil {
		return false, fmt.Errorf("reading Echo %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return finalbackup.Pending(ctx, r, echo)
}

// watchFinalBackups makes a final backup's progress start a reconcile of
// its Echo, so that the uninstall held at the gate goes on as soon as the
// backup completes rather than at the next retry.
func watchFinalBackups(mgr ctrl.Manager) reconciler.ControllerSetupFunc {
	return func(c reconciler.ControllerSetup) error {
		return c.Watch(source.Kind(mgr.GetCache(), client.Object(&echov1alpha1.EchoBackup{}),
			handler.EnqueueRequestsFromMapFunc(finalbackup.EchoOf)))
	}
}
