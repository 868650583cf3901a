package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	livev1alpha1 "github.com/echo-operator/echo-operator/api/live/v1alpha1"
	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// Cache index fields of the restore controller.
const (
	restoreBackupField = ".spec.source.backupName"
	restoreEchoField   = ".status.echoName"
	// echoHolderField indexes Echoes by the restore holding them.
	echoHolderField = "metadata.annotations.restore-in-progress"
)

// EchoRestoreReconciler restores an Echo from a backup in steps, each
// decided afresh from what the cluster shows:
//
//  1. resolve the source: an EchoBackup (waiting for it to complete) or a
//     storage location and key;
//  2. run an inspect Job that checks the manifest and hands back the
//     backed-up Echo, before anything is touched;
//  3. create the Echo from that configuration when it does not exist, or
//     take the existing one; either way quiesced (echo.dev/restore-in-progress)
//     when it keeps data, so its release runs no pod;
//  4. once no pod runs, run a restore Job that writes the data into the
//     Echo's claim (DataRestored);
//  5. give the Echo back and wait until it is Ready on the restored data
//     (Complete).
//
// A failure at any step gives the Echo back untouched by the failed step:
// the data mover verifies everything before it swaps data in.
type EchoRestoreReconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
	// APIReader reads what the cache leaves out: the Echo's own pods.
	APIReader client.Reader
	// MoverImage is the operator's image, whose inspect and restore
	// subcommands the Jobs run.
	MoverImage string
	// MoverEnv is passed on to the data mover's pods: the cluster's proxy
	// settings, as the operator's environment has them.
	MoverEnv []corev1.EnvVar
	// JobSigner signs the Jobs the operator creates, and tells them from
	// Jobs of their names that anyone else created (jobs.go).
	JobSigner *releasetrust.Signer
	// Clock tells the time; nil is the wall clock.
	Clock Clock
	// StorageSecrets holds the metadata of opted-in storage Secrets
	// (NewStorageSecretCache): their events bring back the restores that
	// wait for one. Nil watches none.
	StorageSecrets cache.Cache
	// StorageEndpoints are the endpoints the operator's administrator
	// allows every ServiceAccount's token and SSE-C key to be sent to,
	// besides those each object lists; the zero value: none.
	StorageEndpoints storagesecrets.ClusterEndpoints
	// PodLogs reads the log of a finished Job's data mover, kept in the
	// restore's status (moverlog.go); nil keeps none.
	PodLogs PodLogReader
}

// +kubebuilder:rbac:groups=echo.dev,resources=echorestores,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echorestores/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echorestores/finalizers,verbs=update
// +kubebuilder:rbac:groups=echo.dev,resources=echoes,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups,verbs=get;list;watch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackuplocations,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get

// Reconcile moves one EchoRestore a step towards Complete or Failed.
func (r *EchoRestoreReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	rs := &echov1alpha1.EchoRestore{}
	if err := r.Get(ctx, req.NamespacedName, rs); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.releaseOrphanedHolds(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if restoreFinished(rs) && rs.DeletionTimestamp.IsZero() {
		// A restore that finished before it had a phase gets one.
		if err := r.patchStatus(ctx, rs.DeepCopy(), rs); err != nil {
			return ctrl.Result{}, err
		}
	}
	if !rs.DeletionTimestamp.IsZero() || restoreFinished(rs) {
		return r.reconcileRelease(ctx, rs)
	}
	orig := rs.DeepCopy()
	result, err := r.reconcileRestore(ctx, rs)
	if patchErr := r.patchStatus(ctx, orig, rs); patchErr != nil {
		return ctrl.Result{}, patchErr
	}
	return requeueByDeadline(result, rs, r.Clock.Now()), err
}

func (r *EchoRestoreReconciler) reconcileRestore(ctx context.Context, rs *echov1alpha1.EchoRestore) (ctrl.Result, error) {
	if r.failIfPastDeadline(rs) {
		return ctrl.Result{}, nil
	}
	// Once the data is in place the source is no longer read: its
	// EchoBackup may be pruned or deleted meanwhile.
	if meta.IsStatusConditionTrue(rs.Status.Conditions, echov1alpha1.RestoreConditionDataRestored) {
		return r.completeWhenReady(ctx, rs)
	}
	src, err := r.resolveSource(ctx, rs)
	if err != nil || src == nil {
		return ctrl.Result{}, err
	}
	storage, loc, err := resolveStorage(ctx, r.Client, r.APIReader, rs.Namespace, src.storage)
	if err != nil {
		if refused, ok := asLocationUnavailable(err); ok {
			r.fail(rs, echov1alpha1.RestoreReasonLocationUnavailable, refused.message("restore again: this EchoRestore has failed for good"))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	src.resolved(storage, loc)
	// The finalizer gives a quiesced Echo back if the restore is deleted:
	// it is in place before the restore quiesces anything.
	if err := ensureFinalizer(ctx, r.Client, rs, echov1alpha1.RestoreFinalizer, true); err != nil {
		return ctrl.Result{}, err
	}
	if rs.Status.StartTime == nil {
		rs.Status.StartTime = ptrTime(r.Clock.Now())
		rs.Status.EchoName = src.echoName
		r.Recorder.Eventf(rs, corev1.EventTypeNormal, echov1alpha1.EventReasonRestoreStarted, "Restoring Echo %s from %s", src.echoName, src.key)
	}
	inspected, result, err := r.inspectArtifact(ctx, rs, src)
	if err != nil || inspected == nil {
		return result, err
	}
	rs.Status.RestoredFrom = inspected.Location
	echo, err := r.ensureTargetEcho(ctx, rs, inspected)
	if err != nil || echo == nil {
		return ctrl.Result{}, err
	}
	return r.restoreData(ctx, rs, src, echo)
}

// resolveSource finds the artifact to restore and the Echo to restore
// into; nil when the restore failed or waits for its EchoBackup.
func (r *EchoRestoreReconciler) resolveSource(ctx context.Context, rs *echov1alpha1.EchoRestore) (*restoreSource, error) {
	switch {
	case rs.Spec.Source.StoredBackup != "":
		return r.resolveStoredBackup(ctx, rs)
	case rs.Spec.Source.BackupName == "":
		return &restoreSource{storage: *rs.Spec.Source.Storage, key: rs.Spec.Source.Key, echoName: rs.Spec.EchoName}, nil
	}
	b := &echov1alpha1.EchoBackup{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: rs.Spec.Source.BackupName}, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.fail(rs, echov1alpha1.RestoreReasonBackupNotFound, fmt.Sprintf(
				"EchoBackup %q does not exist in namespace %s: name an EchoBackup of this namespace, or restore from source.storage and source.key",
				rs.Spec.Source.BackupName, rs.Namespace))
			return nil, nil
		}
		return nil, fmt.Errorf("reading EchoBackup %s: %w", rs.Spec.Source.BackupName, err)
	}
	switch {
	case meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionFailed):
		r.fail(rs, echov1alpha1.RestoreReasonBackupIncomplete, fmt.Sprintf(
			"EchoBackup %s failed, so there is nothing to restore: %s", b.Name, b.Status.Error))
		return nil, nil
	case !meta.IsStatusConditionTrue(b.Status.Conditions, echov1alpha1.BackupConditionComplete):
		r.progress(rs, echov1alpha1.RestoreReasonWaitingForBackup, fmt.Sprintf("Waiting for EchoBackup %s to complete", b.Name))
		return nil, nil
	}
	echoName := rs.Spec.EchoName
	if echoName == "" {
		echoName = b.Spec.EchoName
	}
	storage := b.Spec.Storage
	if rs.Spec.Source.Copy == "" && backupPruned(b) {
		r.fail(rs, echov1alpha1.RestoreReasonArtifactPruned, fmt.Sprintf(
			"The artifact of EchoBackup %s in its storage was pruned under its schedule's retention: restore from a copy that holds it (source.copy: one of %v)",
			b.Name, copiesHoldingNames(b)))
		return nil, nil
	}
	if name := rs.Spec.Source.Copy; name != "" {
		copied, ok := r.copyStorage(rs, b, name)
		if !ok {
			return nil, nil
		}
		storage = copied
	}
	return &restoreSource{storage: storage, key: artifactKey(b), echoName: echoName}, nil
}

// copyStorage is the storage of the copy name of b, which the restore
// reads from once the copy completed; false when the restore failed or
// waits for the copy.
func (r *EchoRestoreReconciler) copyStorage(rs *echov1alpha1.EchoRestore, b *echov1alpha1.EchoBackup, name string) (echov1alpha1.BackupStorage, bool) {
	i := slices.IndexFunc(b.Spec.CopyTo, func(c echov1alpha1.BackupCopy) bool { return c.Name == name })
	if i < 0 {
		names := make([]string, len(b.Spec.CopyTo))
		for j, c := range b.Spec.CopyTo {
			names[j] = c.Name
		}
		r.fail(rs, echov1alpha1.RestoreReasonCopyUnavailable, fmt.Sprintf(
			"EchoBackup %s has no copy %q (its copies: %v): name one of them in source.copy, or leave it out to restore from the backup's storage", b.Name, name, names))
		return echov1alpha1.BackupStorage{}, false
	}
	st := slices.IndexFunc(b.Status.Copies, func(c echov1alpha1.BackupCopyStatus) bool { return c.Name == name })
	switch {
	case st >= 0 && b.Status.Copies[st].Phase == echov1alpha1.PhaseCompleted:
		return b.Spec.CopyTo[i].Storage, true
	case st >= 0 && b.Status.Copies[st].Phase == echov1alpha1.PhasePruned:
		r.fail(rs, echov1alpha1.RestoreReasonArtifactPruned, fmt.Sprintf(
			"Copy %s of EchoBackup %s was pruned under its schedule's retention, so there is nothing to restore there: restore from another copy, or from the backup's storage", name, b.Name))
		return echov1alpha1.BackupStorage{}, false
	case st >= 0 && b.Status.Copies[st].Phase == echov1alpha1.PhaseFailed:
		r.fail(rs, echov1alpha1.RestoreReasonCopyUnavailable, fmt.Sprintf(
			"Copy %s of EchoBackup %s failed, so there is nothing to restore there (%s): restore from another copy, or from the backup's storage", name, b.Name, b.Status.Copies[st].Message))
		return echov1alpha1.BackupStorage{}, false
	}
	r.progress(rs, echov1alpha1.RestoreReasonWaitingForBackup, fmt.Sprintf("Waiting for copy %s of EchoBackup %s to complete", name, b.Name))
	return echov1alpha1.BackupStorage{}, false
}

// resolveStoredBackup finds the location and key a StoredBackup name
// stands for: the artifact is read from that EchoBackupLocation's
// storage, into the backed-up Echo's name unless spec.echoName says
// otherwise. nil when the restore failed.
func (r *EchoRestoreReconciler) resolveStoredBackup(ctx context.Context, rs *echov1alpha1.EchoRestore) (*restoreSource, error) {
	name := rs.Spec.Source.StoredBackup
	location, key, ok := livev1alpha1.ParseStoredBackupName(name)
	if !ok {
		r.fail(rs, echov1alpha1.RestoreReasonBackupNotFound, fmt.Sprintf(
			"source.storedBackup %q is not a name kubectl get storedbackups shows (<location>.<namespace>.<echo>.<backup>)", name))
		return nil, nil
	}
	loc := &echov1alpha1.EchoBackupLocation{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: rs.Namespace, Name: location}, loc); err != nil {
		if apierrors.IsNotFound(err) {
			r.fail(rs, echov1alpha1.RestoreReasonBackupNotFound, fmt.Sprintf(
				"EchoBackupLocation %q of stored backup %s does not exist in namespace %s: create it, or restore from source.storage and source.key",
				location, name, rs.Namespace))
			return nil, nil
		}
		return nil, fmt.Errorf("reading EchoBackupLocation %s: %w", location, err)
	}
	echoName := rs.Spec.EchoName
	if echoName == "" {
		echoName = strings.Split(key, "/")[1]
	}
	return &restoreSource{storage: echov1alpha1.BackupStorage{S3: loc.Spec.S3.DeepCopy()}, key: key, echoName: echoName, location: loc}, nil
}

// inspectArtifact runs the inspect Job and returns its result once it
// has one; nil while it runs or when the restore failed.
func (r *EchoRestoreReconciler) inspectArtifact(ctx context.Context, rs *echov1alpha1.EchoRestore, src *restoreSource) (*moverprotocol.Inspection, ctrl.Result, error) {
	job, err := r.ensureJob(ctx, rs, inspectJob(rs, *src, moverFor(r.MoverImage, r.MoverEnv, rs.Spec.Mover, src.location)),
		storageOptInCheck(r.APIReader, rs.Namespace, src.storage, r.StorageEndpoints))
	if err != nil || job == nil {
		return nil, ctrl.Result{}, err
	}
	inspection := &moverprotocol.Inspection{}
	done, result, err := r.jobOutcome(ctx, rs, job, moverprotocol.Inspect, inspection,
		echov1alpha1.RestoreReasonInspecting, fmt.Sprintf("Job %s is checking the backup %s", job.Name, src.key))
	if err != nil || !done {
		return nil, result, err
	}
	return inspection, ctrl.Result{}, nil
}

// restoreData writes the backup's data into a quiesced Echo's claim, and
// records it in DataRestored. An Echo without persistence has no data to
// restore (ensureTargetEcho refused a backup that holds some).
func (r *EchoRestoreReconciler) restoreData(ctx context.Context, rs *echov1alpha1.EchoRestore, src *restoreSource, echo *echov1alpha1.Echo) (ctrl.Result, error) {
	if !persistent(echo) {
		r.dataRestored(rs, "The backup holds no data, only the configuration")
		return ctrl.Result{}, nil
	}
	if ok, why, err := r.quiesced(ctx, echo); err != nil || !ok {
		if err != nil {
			return ctrl.Result{}, err
		}
		// Pods shutting down are not watched: look again shortly.
		r.progress(rs, echov1alpha1.RestoreReasonQuiescing, why)
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	job, err := r.ensureJob(ctx, rs, restoreJob(rs, *src, echo, moverFor(r.MoverImage, r.MoverEnv, rs.Spec.Mover, src.location)),
		allChecks(dataClaimCheck(r.APIReader, echo), storageOptInCheck(r.APIReader, rs.Namespace, src.storage, r.StorageEndpoints)))
	if err != nil || job == nil {
		return ctrl.Result{}, err
	}
	var res moverprotocol.Archive
	done, result, err := r.jobOutcome(ctx, rs, job, moverprotocol.Restore, &res,
		echov1alpha1.RestoreReasonRestoringData, fmt.Sprintf("Job %s is restoring the data of Echo %s", job.Name, echo.Name))
	if err != nil || !done {
		return result, err
	}
	message := fmt.Sprintf("Restored %d files (%d bytes) into claim %s", res.Files, res.Size, dataClaimName(echo))
	if res.Verified > 0 {
		message += fmt.Sprintf("; %d files read back match the backup's manifest", res.Verified)
	}
	r.dataRestored(rs, message)
	return ctrl.Result{}, nil
}

// ensureJob returns one of the restore's Jobs, creating it on first sight
// once check finds what it reads and writes opted in (storageOptInCheck,
// dataClaimCheck); nil when a storage Secret does not exist yet, and the
// restore waits for it, or when something refused or a Job of its name is
// not one the operator created for the restore, and the restore failed.
func (r *EchoRestoreReconciler) ensureJob(ctx context.Context, rs *echov1alpha1.EchoRestore, want *batchv1.Job,
	check func(context.Context) error) (*batchv1.Job, error) {
	job, created, err := ensureOwnedJob(ctx, r.Client, r.APIReader, r.Scheme, restoreWork(r.JobSigner, rs), &rs.Status.Jobs, want, check)
	if refused, ok := asJobNotOwned(err); ok {
		r.failWith(rs, echov1alpha1.ReasonJobNotOwned, echov1alpha1.EventReasonJobNotOwned,
			refused.message("EchoRestore "+rs.Name, "then restore again, or restore now under another EchoRestore name: this EchoRestore has failed for good"))
		return nil, nil
	}
	if missing, ok := asSecretsNotFound(err); ok {
		r.waitForSecrets(rs, missing)
		return nil, nil
	}
	if refused, ok := asOptInRefusal(err); ok {
		r.failWith(rs, refused.reason(), refused.reason(), refused.message("restore again: this EchoRestore has failed for good", ""))
		return nil, nil
	}
	if created {
		log.FromContext(ctx).Info("Started data mover Job", "job", job.Name)
	}
	return job, err
}

// jobOutcome reads what one of the restore's Jobs came to: done once it
// succeeded, with the data mover's result decoded into result. A Job under
// way is the restore's progress (reason and message), or says that its
// pod waits for a node (setMoverProgress). A failed Job fails the restore
// with what to fix. The end of the mover's log of a finished Job is kept
// in the status, in place of an earlier Job's.
func (r *EchoRestoreReconciler) jobOutcome(ctx context.Context, rs *echov1alpha1.EchoRestore, job *batchv1.Job,
	step moverprotocol.Command, result any, reason, message string) (done bool, _ ctrl.Result, _ error) {
	out, err := readMoverJob(ctx, r.Client, r.APIReader, job, r.Clock.Now(), result)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if out.outcome != moverRunning && out.outcome != moverAwaitingResult {
		moverLogReader{cache: r.Client, api: r.APIReader, logs: r.PodLogs}.ensureMoverLog(ctx, &rs.Status.MoverLog, job)
	}
	switch out.outcome {
	case moverSucceeded:
		return true, ctrl.Result{}, nil
	case moverRunning:
		if !restoreFinished(rs) {
			setMoverProgress(r.Recorder, rs, &rs.Status.Conditions, job, out.unschedulable, reason, message)
		}
	case moverAwaitingResult:
		if !restoreFinished(rs) {
			r.progress(rs, reason, message)
		}
		return false, ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	case moverFailed:
		if out.failure != nil {
			r.fail(rs, restoreFailureReason(out.failure.Reason), restoreFailureMessage(rs, out.failure))
		} else {
			r.fail(rs, echov1alpha1.RestoreReasonJobFailed, fmt.Sprintf("The %s Job %s failed: %s", step, job.Name, out.jobMessage))
		}
	case moverSilent:
		r.fail(rs, echov1alpha1.RestoreReasonJobFailed, fmt.Sprintf("The %s Job %s succeeded without reporting its result", step, job.Name))
	}
	return false, ctrl.Result{}, nil
}

// SetupWithManager registers the controller. Besides its Jobs, a restore
// follows the EchoBackup it waits for and the Echo (and its Deployment) it
// restores, found through cache indexes, and the opted-in Secrets of its
// namespace while it waits for one.
func (r *EchoRestoreReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.JobSigner == nil {
		return errNoJobSigner
	}
	ctx := context.Background()
	indexer := mgr.GetFieldIndexer()
	if err := indexer.IndexField(ctx, &echov1alpha1.EchoRestore{}, restoreBackupField, func(o client.Object) []string {
		return nonEmpty(o.(*echov1alpha1.EchoRestore).Spec.Source.BackupName)
	}); err != nil {
		return fmt.Errorf("indexing EchoRestores by backup: %w", err)
	}
	if err := indexer.IndexField(ctx, &echov1alpha1.EchoRestore{}, restoreEchoField, func(o client.Object) []string {
		return nonEmpty(o.(*echov1alpha1.EchoRestore).Status.EchoName)
	}); err != nil {
		return fmt.Errorf("indexing EchoRestores by Echo: %w", err)
	}
	if err := indexer.IndexField(ctx, &echov1alpha1.Echo{}, echoHolderField, func(o client.Object) []string {
		return nonEmpty(o.GetAnnotations()[echov1alpha1.RestoreAnnotation])
	}); err != nil {
		return fmt.Errorf("indexing Echoes by the restore holding them: %w", err)
	}
	if err := indexSecretWaiters(ctx, indexer, &echov1alpha1.EchoRestore{}, func(o client.Object) bool {
		return unfinished(o.(*echov1alpha1.EchoRestore).Status.Conditions)
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("echorestore").
		WithOptions(controllerOptions(1)).
		For(&echov1alpha1.EchoRestore{}).
		Owns(&batchv1.Job{}).
		Watches(&corev1.Pod{}, moverPodOwner(echov1alpha1.RestoreLabel), builder.WithPredicates(podSchedulingChanged)).
		Watches(&echov1alpha1.EchoBackup{}, r.restoresBy(restoreBackupField, func(o client.Object) string { return o.GetName() })).
		Watches(&echov1alpha1.Echo{}, r.restoresBy(restoreEchoField, func(o client.Object) string { return o.GetName() })).
		Watches(&echov1alpha1.Echo{}, handler.EnqueueRequestsFromMapFunc(holdingRestore)).
		Watches(&appsv1.Deployment{}, r.restoresBy(restoreEchoField, func(o client.Object) string {
			return o.GetLabels()[chart.InstanceLabel]
		}))
	if r.StorageSecrets != nil {
		b = b.WatchesRawSource(storageSecretSource(r.StorageSecrets, r.Client, func() client.ObjectList { return &echov1alpha1.EchoRestoreList{} }))
	}
	return b.Complete(r)
}

// restoresBy maps an object to the restores of its namespace whose index
// field holds the name key gives for it.
func (r *EchoRestoreReconciler) restoresBy(field string, key func(client.Object) string) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		name := key(o)
		if name == "" {
			return nil
		}
		list := &echov1alpha1.EchoRestoreList{}
		if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()), client.MatchingFields{field: name}); err != nil {
			log.FromContext(ctx).Error(err, "Listing the restores of an object", "object", name)
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(list.Items))
		for _, rs := range list.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rs)})
		}
		return reqs
	})
}

// holdingRestore maps a held Echo to the restore its hold names, which
// may be gone.
func holdingRestore(_ context.Context, echo client.Object) []reconcile.Request {
	name := echo.GetAnnotations()[echov1alpha1.RestoreAnnotation]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: echo.GetNamespace(), Name: name}}}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
