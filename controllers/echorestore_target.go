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
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
)

// The Echo a restore writes into: the existing one, or one created from
// the backed-up configuration that inspect handed back.

// maxBackedUpEchoSize bounds the backed-up Echo a restore decodes.
const maxBackedUpEchoSize = 1 << 20

// ensureTargetEcho returns the Echo to restore into, quiesced by this
// restore when it keeps data: the existing one, or one created from the
// backed-up configuration. It returns nil while another restore holds the
// Echo, and when the restore failed.
func (r *EchoRestoreReconciler) ensureTargetEcho(ctx context.Context, rs *echov1alpha1.EchoRestore, inspected *moverprotocol.Inspection) (*echov1alpha1.Echo, error) {
	echo := &echov1alpha1.Echo{}
	err := r.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Status.EchoName}, echo)
	switch {
	case apierrors.IsNotFound(err):
		return nil, r.createEcho(ctx, rs, inspected)
	case err != nil:
		return nil, fmt.Errorf("reading Echo %s: %w", rs.Status.EchoName, err)
	}
	if !rs.Status.EchoCreated && createdByRestore(rs, echo) {
		// Created by this restore, which stopped before it could record it.
		r.echoCreated(ctx, rs, echo.Name)
	}
	holder := echo.Annotations[echov1alpha1.RestoreAnnotation]
	switch {
	case restoreTestOf(rs) != "" && !isScratchEchoOf(echo, restoreTestOf(rs)):
		r.fail(rs, echov1alpha1.RestoreTestReasonScratchEchoTaken, notScratchMessage(rs, echo))
		return nil, nil
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
func (r *EchoRestoreReconciler) createEcho(ctx context.Context, rs *echov1alpha1.EchoRestore, inspected *moverprotocol.Inspection) error {
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
	r.echoCreated(ctx, rs, echo.Name)
	return nil
}

// echoCreated records that the restore created its Echo.
func (r *EchoRestoreReconciler) echoCreated(ctx context.Context, rs *echov1alpha1.EchoRestore, name string) {
	rs.Status.EchoCreated = true
	log.FromContext(ctx).Info("Created Echo from its backup", "echo", name)
	r.Recorder.Eventf(rs, corev1.EventTypeNormal, echov1alpha1.EventReasonEchoCreated, "Created Echo %s from the backed-up configuration", name)
}

// createdByRestore reports whether an Echo is the one this restore created
// from its artifact: it names that artifact, and was created once the
// restore had started (an Echo an earlier restore of the same artifact
// created is older). The API server keeps times to the second, hence the
// comparison at that precision.
func createdByRestore(rs *echov1alpha1.EchoRestore, echo *echov1alpha1.Echo) bool {
	from := echo.Annotations[echov1alpha1.RestoredFromAnnotation]
	return from != "" && from == rs.Status.RestoredFrom && rs.Status.StartTime != nil &&
		echo.CreationTimestamp.Compare(rs.Status.StartTime.Truncate(time.Second)) >= 0
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
func decodeBackedUpEcho(res *moverprotocol.Inspection) (*backedUpEchoDoc, error) {
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
	delete(annotations, echov1alpha1.PauseAnnotation)
	delete(annotations, echov1alpha1.RestoreAnnotation)
	annotations[echov1alpha1.RestoredFromAnnotation] = rs.Status.RestoredFrom
	echo := &echov1alpha1.Echo{
		ObjectMeta: metav1.ObjectMeta{Namespace: rs.Namespace, Name: rs.Status.EchoName,
			Labels: maps.Clone(doc.Metadata.Labels), Annotations: annotations},
		Spec: *doc.Spec,
	}
	if restoreTestOf(rs) != "" {
		makeScratch(rs, echo)
	}
	if persistent(echo) {
		annotations[echov1alpha1.RestoreAnnotation] = rs.Name
	}
	return echo
}
