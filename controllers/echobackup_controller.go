package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// Event reasons of EchoBackups.
const (
	EventReasonBackupStarted   = "BackupStarted"
	EventReasonBackupCompleted = "BackupCompleted"
	EventReasonBackupFailed    = "BackupFailed"
)

// resultGracePeriod is how long a finished Job may take to show its
// result: the kubelet reports the termination message with the pod's
// final status, so past this the result is taken as lost.
const resultGracePeriod = 2 * time.Minute

// EchoBackupReconciler runs each EchoBackup as a Job of the operator's own
// image and reports the Job's outcome. A finished backup is not reconciled
// again until it is deleted: with deletion policy Delete, a second Job
// then deletes its artifact (echobackup_delete.go).
type EchoBackupReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
	// APIReader reads what the cache keeps only in part: the Echo's Helm
	// release, whose chart and values the backup records.
	APIReader client.Reader
	// ReleaseVerifier tells the release records echo-operator wrote from
	// the others, which a backup never records.
	ReleaseVerifier *releasetrust.Signer
	// MoverImage is the operator's image, whose backup subcommand the Job runs.
	MoverImage string
	// Clock tells the time; nil is the wall clock.
	Clock Clock
}

// +kubebuilder:rbac:groups=echo.dev,resources=echobackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// Reconcile moves one EchoBackup towards Complete or Failed.
func (r *EchoBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &echov1alpha1.EchoBackup{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, b)
	}
	// Added before anything is stored; a finished backup lacks it only if
	// it finished before the finalizer existed.
	if wantsArtifactFinalizer(b) && !controllerutil.ContainsFinalizer(b, ArtifactFinalizer) {
		if err := r.addArtifactFinalizer(ctx, b); err != nil {
			return ctrl.Result{}, err
		}
	}
	if backupFinished(b) {
		return ctrl.Result{}, r.deleteFinishedJob(ctx, b)
	}
	orig := b.DeepCopy()
	result, err := r.reconcileBackup(ctx, b)
	if patchErr := r.patchStatus(ctx, orig, b); patchErr != nil {
		return ctrl.Result{}, patchErr
	}
	if err == nil && backupFinished(b) {
		err = r.deleteFinishedJob(ctx, b)
	}
	return result, err
}

func (r *EchoBackupReconciler) reconcileBackup(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	echo := &echov1alpha1.Echo{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.EchoName}, echo); err != nil {
		if apierrors.IsNotFound(err) {
			r.fail(b, echov1alpha1.BackupReasonEchoNotFound,
				fmt.Sprintf("Echo %q does not exist in namespace %s: create it, or a new EchoBackup for an Echo that exists", b.Spec.EchoName, b.Namespace))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading Echo %s: %w", b.Spec.EchoName, err)
	}

	if b.Status.StartTime == nil {
		b.Status.StartTime = ptrTime(r.Clock.Now())
		b.Status.EchoGeneration = echo.Generation
	}
	if err := r.ensureConfigMap(ctx, b, echo); err != nil {
		return ctrl.Result{}, err
	}
	job, err := r.ensureJob(ctx, b, echo)
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.observeJob(ctx, b, job)
}

// ensureConfigMap creates the ConfigMap carrying the configuration to back
// up: the Echo as it is now and the Helm release deployed for it.
func (r *EchoBackupReconciler) ensureConfigMap(ctx context.Context, b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo) error {
	key := client.ObjectKey{Namespace: b.Namespace, Name: backupConfigName(b)}
	if err := r.Get(ctx, key, &corev1.ConfigMap{}); err == nil || !apierrors.IsNotFound(err) {
		return client.IgnoreNotFound(err)
	}
	config, err := backupConfig(ctx, r.APIReader, r.ReleaseVerifier, echo)
	if err != nil {
		return err
	}
	cm := backupConfigMap(b, config)
	if err := controllerutil.SetControllerReference(b, cm, r.Scheme); err != nil {
		return fmt.Errorf("owning ConfigMap %s: %w", cm.Name, err)
	}
	if err := r.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
	}
	return nil
}

// ensureJob returns the backup's Job, creating it on first sight. Its
// deterministic name makes AlreadyExists a lock against a stale cache.
func (r *EchoBackupReconciler) ensureJob(ctx context.Context, b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: backupJobName(b)}, job)
	if err == nil || !apierrors.IsNotFound(err) {
		return job, err
	}
	job = backupJob(b, echo, r.MoverImage)
	if err := controllerutil.SetControllerReference(b, job, r.Scheme); err != nil {
		return nil, fmt.Errorf("owning Job %s: %w", job.Name, err)
	}
	if err := r.Create(ctx, job); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return job, nil
		}
		return nil, fmt.Errorf("creating Job %s: %w", job.Name, err)
	}
	log.FromContext(ctx).Info("Started backup", "job", job.Name, "echo", echo.Name)
	r.Recorder.Eventf(b, corev1.EventTypeNormal, EventReasonBackupStarted, "Started Job %s to back up Echo %s", job.Name, echo.Name)
	return job, nil
}

// observeJob turns a finished Job into the backup's outcome.
func (r *EchoBackupReconciler) observeJob(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job) (ctrl.Result, error) {
	complete, failed := jobFinished(job)
	if !complete && !failed {
		return ctrl.Result{}, nil
	}
	res, err := jobMoverResult(ctx, r.Client, job)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch {
	case failed:
		reason, message := echov1alpha1.BackupReasonJobFailed, "The backup Job failed: "+jobFailureMessage(job)
		if res != nil && res.Error != "" {
			reason, message = backupFailureReason(res.Reason), res.Error
		}
		r.fail(b, reason, message)
	case res != nil && res.Error == "" && res.Checksum != "":
		r.complete(b, res)
	case res == nil && r.Clock.Now().Sub(jobFinishTime(job)) < resultGracePeriod:
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	default:
		r.fail(b, echov1alpha1.BackupReasonArtifactMissing, "The backup Job succeeded without reporting a stored artifact")
	}
	return ctrl.Result{}, nil
}

// jobMoverResult reads the result the data mover left as its container's
// termination message, from the newest pod of one Job that has one. Pods
// are matched by the Job's UID: the pods of an earlier Job of the same
// name, or of the backup's other Jobs, which may linger, do not answer.
func jobMoverResult(ctx context.Context, c client.Reader, job *batchv1.Job) (*moverResult, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return nil, fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
	}
	return newestMoverResult(pods.Items), nil
}

// newestMoverResult is the result of the pod that ended last, if any has.
func newestMoverResult(pods []corev1.Pod) *moverResult {
	var newest *moverResult
	var newestAt time.Time
	for i := range pods {
		msg, at, ok := terminationMessage(&pods[i])
		if !ok || (newest != nil && !at.After(newestAt)) {
			continue
		}
		res := &moverResult{}
		if err := json.Unmarshal([]byte(msg), res); err != nil {
			res = &moverResult{Error: "the data mover ended with: " + truncateMessage(msg), Reason: "Unknown"}
		}
		newest, newestAt = res, at
	}
	return newest
}

func (r *EchoBackupReconciler) complete(b *echov1alpha1.EchoBackup, res *moverResult) {
	b.Status.Size, b.Status.Checksum, b.Status.Location = res.Size, res.Checksum, res.Location
	b.Status.CompletionTime = ptrTime(r.Clock.Now())
	b.Status.Error = ""
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionComplete, metav1.ConditionTrue, echov1alpha1.BackupReasonCompleted,
		fmt.Sprintf("Stored %d bytes at %s", res.Size, res.Location))
	r.Recorder.Eventf(b, corev1.EventTypeNormal, EventReasonBackupCompleted, "Stored %d bytes at %s", res.Size, res.Location)
}

func (r *EchoBackupReconciler) fail(b *echov1alpha1.EchoBackup, reason, message string) {
	b.Status.Error = message
	b.Status.CompletionTime = ptrTime(r.Clock.Now())
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionFailed, metav1.ConditionTrue, reason, message)
	r.Recorder.Event(b, corev1.EventTypeWarning, EventReasonBackupFailed, message)
}

// patchStatus writes the status when it changed.
func (r *EchoBackupReconciler) patchStatus(ctx context.Context, orig, b *echov1alpha1.EchoBackup) error {
	b.Status.ObservedGeneration = b.Generation
	return patchStatusIfChanged(ctx, r.Client, "EchoBackup", orig, b, orig.Status, b.Status)
}

// SetupWithManager registers the controller; backup Jobs map to their
// backup through their owner reference, delete Jobs, which have none,
// through their label.
func (r *EchoBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("echobackup").
		For(&echov1alpha1.EchoBackup{}).
		Owns(&batchv1.Job{}).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(deleteJobBackup)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		Complete(r)
}

// deleteJobBackup maps a delete Job to the EchoBackup it deletes the
// artifact of.
func deleteJobBackup(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[BackupLabel]
	if name == "" || obj.GetName() != childName(name, "delete") {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

func backupFinished(b *echov1alpha1.EchoBackup) bool {
	return meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete) ||
		meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionFailed)
}
