package controllers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/helmreconciler"
)

// RestoredFromAnnotation records, on an Echo a restore created, the
// artifact it was created from.
const RestoredFromAnnotation = "echo.dev/restored-from"

// maxBackedUpEchoSize bounds the backed-up Echo a restore decodes.
const maxBackedUpEchoSize = 1 << 20

// ensureTargetEcho returns the Echo to restore into, quiesced by this
// restore when it keeps data: the existing one, or one created from the
// backed-up configuration. It returns nil while another restore holds the
// Echo, and when the restore failed.
func (r *EchoRestoreReconciler) ensureTargetEcho(ctx context.Context, rs *echov1alpha1.EchoRestore, inspected *moverResult) (*echov1alpha1.Echo, error) {
	echo := &echov1alpha1.Echo{}
	err := r.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Status.EchoName}, echo)
	switch {
	case apierrors.IsNotFound(err):
		return nil, r.createEcho(ctx, rs, inspected)
	case err != nil:
		return nil, fmt.Errorf("reading Echo %s: %w", rs.Status.EchoName, err)
	}
	holder := echo.Annotations[echov1alpha1.RestoreAnnotation]
	switch {
	case !echo.DeletionTimestamp.IsZero():
		r.fail(rs, echov1alpha1.RestoreReasonEchoDeleted, fmt.Sprintf(
			"Echo %s is being deleted: restore into it once it is gone, and the restore creates it anew", echo.Name))
		return nil, nil
	case holder == rs.Name:
		return echo, nil
	case holder != "":
		r.progress(rs, echov1alpha1.RestoreReasonWaitingForRestore, fmt.Sprintf(
			"EchoRestore %s is restoring Echo %s: this restore starts when it is done", holder, echo.Name))
		return nil, nil
	case !persistent(echo) && inspected.DataFiles > 0:
		r.fail(rs, echov1alpha1.RestoreReasonNoVolume, fmt.Sprintf(
			"Echo %s keeps no data (spec.persistence is off) but the backup holds %d data files: enable spec.persistence on it, or restore into a new Echo",
			echo.Name, inspected.DataFiles))
		return nil, nil
	case !persistent(echo):
		return echo, nil
	}
	return echo, r.holdEcho(ctx, rs, echo)
}

// createEcho creates the target Echo from the backed-up configuration,
// quiesced when it keeps data so that no pod starts before the data is in
// place. The Echo is not owned by the restore: it outlives it.
func (r *EchoRestoreReconciler) createEcho(ctx context.Context, rs *echov1alpha1.EchoRestore, inspected *moverResult) error {
	if inspected.EchoOmitted {
		r.fail(rs, echov1alpha1.RestoreReasonInvalidConfig, fmt.Sprintf(
			"The backed-up Echo is too large to hand back from the artifact: create Echo %s from the \"echo\" member of config.json "+
				"in the artifact (or of manifest.json's config), then restore into it in place", rs.Status.EchoName))
		return nil
	}
	backedUp, err := decodeBackedUpEcho(inspected)
	if err != nil {
		r.fail(rs, echov1alpha1.RestoreReasonVerifyFailed, fmt.Sprintf("The backup's configuration is unreadable: %v", err))
		return nil
	}
	echo := echoFromBackup(rs, backedUp)
	if err := r.Create(ctx, echo); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err):
			return nil // the next reconcile takes it
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			r.fail(rs, echov1alpha1.RestoreReasonInvalidConfig, fmt.Sprintf(
				"This cluster rejects the backed-up Echo: %v: create Echo %s yourself, then restore into it", err, echo.Name))
			return nil
		}
		return fmt.Errorf("creating Echo %s: %w", echo.Name, err)
	}
	rs.Status.EchoCreated = true
	log.FromContext(ctx).Info("Created Echo from its backup", "echo", echo.Name)
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, EventReasonEchoCreated, "Created Echo %s from the backed-up configuration", echo.Name)
	return nil
}

// backedUpEchoDoc is the backed-up Echo the inspect Job hands back.
type backedUpEchoDoc struct {
	Metadata struct {
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec *echov1alpha1.EchoSpec `json:"spec"`
}

// decodeBackedUpEcho reads the backed-up Echo from an inspect result.
func decodeBackedUpEcho(res *moverResult) (*backedUpEchoDoc, error) {
	raw := []byte(res.Echo)
	if res.EchoGzip != "" {
		zipped, err := base64.StdEncoding.DecodeString(res.EchoGzip)
		if err != nil {
			return nil, fmt.Errorf("decoding echoGzip: %w", err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(zipped))
		if err != nil {
			return nil, fmt.Errorf("decoding echoGzip: %w", err)
		}
		if raw, err = io.ReadAll(io.LimitReader(zr, maxBackedUpEchoSize)); err != nil {
			return nil, fmt.Errorf("decoding echoGzip: %w", err)
		}
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("the backup holds no Echo configuration")
	}
	doc := &backedUpEchoDoc{}
	if err := json.Unmarshal(raw, doc); err != nil {
		return nil, fmt.Errorf("decoding the backed-up Echo: %w", err)
	}
	if doc.Spec == nil {
		return nil, fmt.Errorf("the backed-up Echo has no spec")
	}
	return doc, nil
}

// echoFromBackup is the Echo a restore creates: the backed-up spec, labels
// and annotations under the target name, without the annotations that
// would hold its release, and quiesced by the restore when it keeps data.
func echoFromBackup(rs *echov1alpha1.EchoRestore, doc *backedUpEchoDoc) *echov1alpha1.Echo {
	annotations := maps.Clone(doc.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, helmreconciler.PauseAnnotation)
	delete(annotations, echov1alpha1.RestoreAnnotation)
	annotations[RestoredFromAnnotation] = rs.Status.RestoredFrom
	echo := &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: rs.Status.EchoName,
			Labels: maps.Clone(doc.Metadata.Labels), Annotations: annotations},
		Spec: *doc.Spec,
	}
	if persistent(echo) {
		annotations[echov1alpha1.RestoreAnnotation] = rs.Name
	}
	return echo
}

// holdEcho quiesces an existing Echo for this restore. The patch carries
// the Echo's resource version, so a concurrent restore cannot take it too.
func (r *EchoRestoreReconciler) holdEcho(ctx context.Context, rs *echov1alpha1.EchoRestore, echo *echov1alpha1.Echo) error {
	patch := client.MergeFromWithOptions(echo.DeepCopy(), client.MergeFromWithOptimisticLock{})
	metav1.SetMetaDataAnnotation(&echo.ObjectMeta, echov1alpha1.RestoreAnnotation, rs.Name)
	if err := r.Patch(ctx, echo, patch); err != nil {
		return fmt.Errorf("quiescing Echo %s: %w", echo.Name, err)
	}
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, EventReasonEchoQuiesced, "Scaling Echo %s to zero to restore its data", echo.Name)
	return nil
}

// quiesced reports whether an Echo held by a restore runs no pod: its
// Deployment (which the release creates for a new Echo) asks for none and
// has none, not even one shutting down, and the Echo reports Restoring, so
// its Ready condition can no longer be one from before the hold.
func (r *EchoRestoreReconciler) quiesced(ctx context.Context, echo *echov1alpha1.Echo) (bool, string, error) {
	d := &appsv1.Deployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: echo.Namespace, Name: echo.Name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("Waiting for the release of Echo %s: %s", echo.Name, readyMessage(echo)), nil
		}
		return false, "", fmt.Errorf("reading the Deployment of Echo %s: %w", echo.Name, err)
	}
	switch {
	case d.Spec.Replicas == nil || *d.Spec.Replicas != 0 || d.Status.ObservedGeneration < d.Generation:
		return false, fmt.Sprintf("Waiting for the release to scale Echo %s to zero: %s", echo.Name, readyMessage(echo)), nil
	case d.Status.Replicas != 0:
		return false, fmt.Sprintf("Waiting for the %d pods of Echo %s to stop", d.Status.Replicas, echo.Name), nil
	case readyReason(echo) != echov1alpha1.EchoReasonRestoring:
		return false, fmt.Sprintf("Waiting for Echo %s to report Restoring", echo.Name), nil
	}
	// The Deployment no longer counts pods that are shutting down, which
	// may still write: ask the API server (the cache holds no echo pods).
	pods := &corev1.PodList{}
	if err := r.APIReader.List(ctx, pods, client.InNamespace(echo.Namespace),
		client.MatchingLabels{"app.kubernetes.io/name": "echo", "app.kubernetes.io/instance": echo.Name}); err != nil {
		return false, "", fmt.Errorf("listing the pods of Echo %s: %w", echo.Name, err)
	}
	if n := len(pods.Items); n > 0 {
		return false, fmt.Sprintf("Waiting for the %d pods of Echo %s to shut down", n, echo.Name), nil
	}
	return true, "", nil
}

// completeWhenReady gives the Echo back once its data is in place and
// completes the restore when the Echo is Ready for its generation again.
func (r *EchoRestoreReconciler) completeWhenReady(ctx context.Context, rs *echov1alpha1.EchoRestore) (ctrl.Result, error) {
	echo, err := r.releaseHold(ctx, rs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if echo == nil {
		r.fail(rs, echov1alpha1.RestoreReasonEchoDeleted, fmt.Sprintf(
			"Echo %s was deleted before it served the restored data", rs.Status.EchoName))
		return ctrl.Result{}, nil
	}
	ready := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != echo.Generation ||
		echo.Annotations[echov1alpha1.RestoreAnnotation] != "" {
		r.progress(rs, echov1alpha1.RestoreReasonWaitingForEcho,
			fmt.Sprintf("Waiting for Echo %s to be Ready: %s", echo.Name, readyMessage(echo)))
		return ctrl.Result{}, nil
	}
	r.complete(rs)
	return ctrl.Result{}, nil
}

// reconcileRelease ends a finished or deleted restore: it gives back the
// Echo it holds, removes its finished Jobs (their pods would keep the
// Echo's claim from being deleted) and lets the restore go.
func (r *EchoRestoreReconciler) reconcileRelease(ctx context.Context, rs *echov1alpha1.EchoRestore) error {
	if _, err := r.releaseHold(ctx, rs); err != nil {
		return err
	}
	if restoreFinished(rs) {
		for _, name := range []string{inspectJobName(rs), restoreJobName(rs)} {
			if err := removeJob(ctx, r.Client, rs.Namespace, name); err != nil {
				return err
			}
		}
	}
	if !controllerutil.ContainsFinalizer(rs, echov1alpha1.RestoreFinalizer) {
		return nil
	}
	patch := client.MergeFromWithOptions(rs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(rs, echov1alpha1.RestoreFinalizer)
	if err := r.Patch(ctx, rs, patch); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("removing the finalizer of EchoRestore %s: %w", rs.Name, err))
	}
	return nil
}

// releaseHold removes this restore's hold from its Echo, if it has one,
// and returns the Echo (nil when it does not exist).
func (r *EchoRestoreReconciler) releaseHold(ctx context.Context, rs *echov1alpha1.EchoRestore) (*echov1alpha1.Echo, error) {
	if rs.Status.EchoName == "" {
		return nil, nil
	}
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Status.EchoName}, echo); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if echo.Annotations[echov1alpha1.RestoreAnnotation] != rs.Name {
		return echo, nil
	}
	patch := client.MergeFromWithOptions(echo.DeepCopy(), client.MergeFromWithOptimisticLock{})
	delete(echo.Annotations, echov1alpha1.RestoreAnnotation)
	if err := r.Patch(ctx, echo, patch); err != nil {
		return nil, fmt.Errorf("giving back Echo %s: %w", echo.Name, err)
	}
	log.FromContext(ctx).Info("Gave back the Echo", "echo", echo.Name)
	return echo, nil
}

func readyReason(echo *echov1alpha1.Echo) string {
	if c := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func readyMessage(echo *echov1alpha1.Echo) string {
	if c := meta.FindStatusCondition(echo.Status.Conditions, echov1alpha1.EchoConditionReady); c != nil {
		return c.Message
	}
	return "no Ready condition yet"
}
