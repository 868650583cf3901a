package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

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
	// JobSigner signs the Jobs the operator creates, and tells them from
	// Jobs of their names that anyone else created (jobs.go).
	JobSigner *releasetrust.Signer
	// MoverImage is the operator's image, whose backup subcommand the Job runs.
	MoverImage string
	// MoverEnv is passed on to the data mover's pods: the cluster's proxy
	// settings, as the operator's environment has them.
	MoverEnv []corev1.EnvVar
	// Clock tells the time; nil is the wall clock.
	Clock Clock
	// StorageSecrets holds the metadata of opted-in storage Secrets
	// (NewStorageSecretCache): their events bring back the backups that
	// wait for one. Nil watches none.
	StorageSecrets cache.Cache
	// StorageEndpoints are the endpoints the operator's administrator
	// allows every ServiceAccount's token and SSE-C key to be sent to,
	// besides those each object lists; the zero value: none.
	StorageEndpoints storagesecrets.ClusterEndpoints
	// PodLogs reads the log of a finished Job's data mover, kept in the
	// backup's status (moverlog.go); nil keeps none.
	PodLogs PodLogReader
}

// +kubebuilder:rbac:groups=echo.dev,resources=echobackups,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=echo.dev,resources=echobackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get

// Reconcile moves one EchoBackup towards Complete or Failed.
func (r *EchoBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &echov1alpha1.EchoBackup{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.removeOrphanedDeleteJob(ctx, req.NamespacedName)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, b)
	}
	// Added before anything is stored; a finished backup lacks it only if
	// it finished before the finalizer existed.
	if wantsArtifactFinalizer(b) {
		if err := ensureFinalizer(ctx, r.Client, b, echov1alpha1.ArtifactFinalizer, true); err != nil {
			return ctrl.Result{}, err
		}
	}
	if backupFinished(b) {
		return r.reconcileFinished(ctx, b)
	}
	orig := b.DeepCopy()
	result, err := r.reconcileBackup(ctx, b)
	if patchErr := r.patchStatus(ctx, orig, b); patchErr != nil {
		return ctrl.Result{}, patchErr
	}
	if err == nil && backupFinished(b) {
		err = r.removeFinishedJob(ctx, b)
	}
	return result, err
}

// reconcileFinished copies a complete backup to its copies' storages
// (echobackup_copy.go), again for the failed ones RetryCopyAnnotation
// lists (echobackup_copy_retry.go), removes the Jobs whose outcome is
// recorded and prunes the locations PruneAnnotation lists
// (echobackup_prune.go). A backup that finished before it had a phase
// gets one.
func (r *EchoBackupReconciler) reconcileFinished(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	orig := b.DeepCopy()
	retryWaiting, err := r.retryRequestedCopies(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	result, err := r.reconcileCopies(ctx, b)
	if patchErr := r.patchStatus(ctx, orig, b); patchErr != nil {
		return ctrl.Result{}, patchErr
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.ensureRetryRequest(ctx, b, retryWaiting); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.removeFinishedJob(ctx, b); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.removeFinishedCopyJobs(ctx, b); err != nil {
		return ctrl.Result{}, err
	}
	pruned, err := r.reconcilePrune(ctx, b)
	return sooner(result, pruned), err
}

func (r *EchoBackupReconciler) reconcileBackup(ctx context.Context, b *echov1alpha1.EchoBackup) (ctrl.Result, error) {
	echo := &echov1alpha1.Echo{}
	if err := r.getEcho(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.EchoName}, echo); err != nil {
		if apierrors.IsNotFound(err) {
			r.fail(b, echov1alpha1.BackupReasonEchoNotFound,
				fmt.Sprintf("Echo %q does not exist in namespace %s: create it, or a new EchoBackup for an Echo that exists", b.Spec.EchoName, b.Namespace))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading Echo %s: %w", b.Spec.EchoName, err)
	}

	if held, err := r.heldByRestore(ctx, b, echo); err != nil || held {
		return ctrl.Result{}, err
	}
	if b.Status.StartTime == nil {
		b.Status.StartTime = ptrTime(r.Clock.Now())
		b.Status.EchoGeneration = echo.Generation
	}
	if err := r.ensureConfigMap(ctx, b, echo); err != nil {
		return ctrl.Result{}, err
	}
	job, err := r.ensureJob(ctx, b, echo)
	if refused, ok := asJobNotOwned(err); ok {
		r.failWith(b, echov1alpha1.ReasonJobNotOwned, echov1alpha1.EventReasonJobNotOwned, backupJobNotOwnedMessage(b, refused))
		return ctrl.Result{}, nil
	}
	if missing, ok := asSecretsNotFound(err); ok {
		r.waitForSecrets(b, missing)
		return ctrl.Result{}, nil
	}
	if refused, ok := asOptInRefusal(err); ok {
		r.failWith(b, refused.reason(), refused.reason(), refused.message("back up again: this EchoBackup has failed for good", ""))
		return ctrl.Result{}, nil
	}
	if refused, ok := asLocationUnavailable(err); ok {
		r.fail(b, echov1alpha1.BackupReasonLocationUnavailable, refused.message("back up again: this EchoBackup has failed for good"))
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.observeJob(ctx, b, job)
}

// getEcho reads the Echo a backup names from the cache and, when the
// cache does not have it, from the API server: an Echo created just before
// its backup may not be in the cache yet, and failing the backup for good
// on a stale cache would lose it.
func (r *EchoBackupReconciler) getEcho(ctx context.Context, key client.ObjectKey, echo *echov1alpha1.Echo) error {
	err := r.Get(ctx, key, echo)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, echo)
	}
	return err
}

// heldByRestore reports whether the backup must wait because an
// EchoRestore holds the Echo (RestoreAnnotation) and is writing its data,
// and says so in the Complete condition. A backup whose Job already runs
// is not held: it started before the restore, which waits for the Echo's
// pods, not for its backups. The Echo's annotations are watched, so its
// release brings the next reconcile.
func (r *EchoBackupReconciler) heldByRestore(ctx context.Context, b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo) (bool, error) {
	restore := echo.Annotations[echov1alpha1.RestoreAnnotation]
	if restore == "" {
		return false, nil
	}
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: backupJobName(b)}, &batchv1.Job{})
	if err == nil || !apierrors.IsNotFound(err) {
		return false, client.IgnoreNotFound(err)
	}
	setCondition(&b.Status.Conditions, b.Generation, echov1alpha1.BackupConditionComplete, metav1.ConditionFalse,
		echov1alpha1.BackupReasonWaitingForRestore,
		fmt.Sprintf("EchoRestore %s is restoring the data of Echo %s: the backup starts once the restore gives the Echo back", restore, echo.Name))
	return true, nil
}

// ensureConfigMap creates the ConfigMap carrying the configuration to back
// up: the Echo as it is now and the Helm release deployed for it.
func (r *EchoBackupReconciler) ensureConfigMap(ctx context.Context, b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo) error {
	key := client.ObjectKey{Namespace: b.Namespace, Name: backupConfigName(b)}
	if err := r.Get(ctx, key, &corev1.ConfigMap{}); err == nil || !apierrors.IsNotFound(err) {
		return client.IgnoreNotFound(err)
	}
	config, err := backupConfig(ctx, r.Client, r.APIReader, r.ReleaseVerifier, echo)
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

// ensureJob returns the backup's Job, creating it on first sight once its
// storage is resolved, its location (if any) is not being deleted, what
// it names is found opted in, and the Echo's data claim is its release's;
// a Job of its name that the operator did not create for the backup is a
// *jobNotOwned.
func (r *EchoBackupReconciler) ensureJob(ctx context.Context, b *echov1alpha1.EchoBackup, echo *echov1alpha1.Echo) (*batchv1.Job, error) {
	storage, loc, err := resolveStorage(ctx, r.Client, r.APIReader, b.Namespace, b.Spec.Storage)
	if err != nil {
		return nil, err
	}
	job, created, err := ensureOwnedJob(ctx, r.Client, r.APIReader, r.Scheme, backupWork(r.JobSigner, b), &b.Status.Jobs,
		backupJob(b, echo, storage, moverFor(r.MoverImage, r.MoverEnv, b.Spec.Mover, loc)),
		allChecks(dataClaimCheck(r.APIReader, echo), newArtifactCheck(r.APIReader, b.Namespace, loc, storage, r.StorageEndpoints)))
	if err != nil || !created {
		return job, err
	}
	log.FromContext(ctx).Info("Started backup", "job", job.Name, "echo", echo.Name)
	r.Recorder.Eventf(b, corev1.EventTypeNormal, echov1alpha1.EventReasonBackupStarted, "Started Job %s to back up Echo %s", job.Name, echo.Name)
	return job, nil
}

// observeJob turns a finished Job into the backup's outcome, with the
// end of its data mover's log.
func (r *EchoBackupReconciler) observeJob(ctx context.Context, b *echov1alpha1.EchoBackup, job *batchv1.Job) (ctrl.Result, error) {
	var archive moverprotocol.Archive
	out, err := readMoverJob(ctx, r.Client, r.APIReader, job, r.Clock.Now(), &archive)
	if err != nil {
		return ctrl.Result{}, err
	}
	if out.outcome != moverRunning && out.outcome != moverAwaitingResult {
		// Written with the outcome, before the Job and its pods go.
		moverLogReader{cache: r.Client, api: r.APIReader, logs: r.PodLogs}.ensureMoverLog(ctx, &b.Status.MoverLog, job)
	}
	switch {
	case out.outcome == moverRunning:
		r.running(b, job, out.unschedulable)
	case out.outcome == moverAwaitingResult:
		r.running(b, job, "")
		return ctrl.Result{RequeueAfter: 5 * time.Second}, nil
	case out.outcome == moverFailed && out.failure != nil:
		r.fail(b, backupFailureReason(out.failure.Reason), out.failure.Error)
	case out.outcome == moverFailed:
		r.fail(b, echov1alpha1.BackupReasonJobFailed, "The backup Job failed: "+out.jobMessage)
	case out.outcome == moverSucceeded && archive.Checksum != "":
		r.complete(b, &archive)
	default:
		r.fail(b, echov1alpha1.BackupReasonArtifactMissing, "The backup Job succeeded without reporting a stored artifact")
	}
	return ctrl.Result{}, nil
}

// removeFinishedJob removes the Job of a finished backup, and with it its
// pods: a pod that mounts a claim, finished or not, keeps the claim from
// being deleted, and the backup outlives its Echo. The outcome is in the
// backup's status by then.
func (r *EchoBackupReconciler) removeFinishedJob(ctx context.Context, b *echov1alpha1.EchoBackup) error {
	return removeOwnJob(ctx, r.Client, b.Namespace, b.Status.Jobs, backupJobName(b))
}

// backupJobNotOwnedMessage says that the backup's Job name is taken by a
// Job the operator did not create, and what to do.
func backupJobNotOwnedMessage(b *echov1alpha1.EchoBackup, refused *jobNotOwned) string {
	return refused.message("EchoBackup "+b.Name, "then back up again, or back up now under another EchoBackup name: this EchoBackup has failed for good")
}

// SetupWithManager registers the controller; backup Jobs map to their
// backup through their owner reference, delete Jobs, which have none,
// through their label; an Echo whose restore hold changes maps to its
// unfinished backups through a cache index (IndexFields); an opted-in
// Secret to the backups of its namespace that wait for one, or whose copy
// does.
func (r *EchoBackupReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.JobSigner == nil {
		return errNoJobSigner
	}
	if err := indexSecretWaiters(context.Background(), mgr.GetFieldIndexer(), &echov1alpha1.EchoBackup{}, func(o client.Object) bool {
		b := o.(*echov1alpha1.EchoBackup)
		return unfinished(b.Status.Conditions) || copyWaitsForSecret(b)
	}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("echobackup").
		For(&echov1alpha1.EchoBackup{}).
		Owns(&batchv1.Job{}).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(deleteJobBackup)).
		Watches(&corev1.Pod{}, moverPodOwner(echov1alpha1.BackupLabel), builder.WithPredicates(podSchedulingChanged)).
		Watches(&echov1alpha1.Echo{}, handler.EnqueueRequestsFromMapFunc(r.heldBackups),
			builder.WithPredicates(predicate.AnnotationChangedPredicate{})).
		WithOptions(controllerOptions(2))
	if r.StorageSecrets != nil {
		b = b.WatchesRawSource(storageSecretSource(r.StorageSecrets, r.Client, func() client.ObjectList { return &echov1alpha1.EchoBackupList{} }))
	}
	return b.Complete(r)
}

// heldBackups maps an Echo to its unfinished backups, which may wait for
// its restore hold to go.
func (r *EchoBackupReconciler) heldBackups(ctx context.Context, echo client.Object) []reconcile.Request {
	list := &echov1alpha1.EchoBackupList{}
	if err := r.List(ctx, list, client.InNamespace(echo.GetNamespace()), client.MatchingFields{backupEchoField: echo.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Listing the backups of an Echo", "echo", echo.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if !backupFinished(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// deleteJobBackup maps a delete Job, of the artifact or of a copy, to the
// EchoBackup it deletes the artifact of. The backup's other Jobs are its
// own, mapped by their owner reference.
func deleteJobBackup(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[echov1alpha1.BackupLabel]
	b := &echov1alpha1.EchoBackup{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if name == "" || obj.GetName() == backupJobName(b) || metav1.GetControllerOf(obj) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}
