package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/moverprotocol"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// The Jobs of every kind that runs the data mover (backups, artifact
// deletion, restores): creating them once, signed, taking only those the
// operator created for their owner (by the UID recorded in the owner's
// status or, with none recorded, by their signature), reading what they
// came to, and removing them with their pods.

// resultGracePeriod is how long a finished Job may take to show its
// result: the kubelet reports the termination message with the pod's
// final status, so past this the result is taken as lost.
const resultGracePeriod = 2 * time.Minute

// jobWork is what a Job works for: the backup or restore (owner), which
// controls it unless controlled is false (a delete Job outlives the
// reference, and carries none), and the key the operator signs its Jobs
// with.
type jobWork struct {
	signer     *releasetrust.Signer
	owner      client.Object
	kind       string
	controlled bool
}

// errNoJobSigner refuses to set up a controller that creates Jobs without
// the key to sign them with.
var errNoJobSigner = errors.New("a controller that creates Jobs needs the key to sign them (JobSigner)")

// backupWork is what the Job backing up b works for.
func backupWork(signer *releasetrust.Signer, b *echov1alpha1.EchoBackup) jobWork {
	return jobWork{signer: signer, owner: b, kind: "EchoBackup", controlled: true}
}

// deleteWork is what the Job deleting the artifact of b works for.
func deleteWork(signer *releasetrust.Signer, b *echov1alpha1.EchoBackup) jobWork {
	return jobWork{signer: signer, owner: b, kind: "EchoBackup"}
}

// restoreWork is what the inspect and restore Jobs of rs work for.
func restoreWork(signer *releasetrust.Signer, rs *echov1alpha1.EchoRestore) jobWork {
	return jobWork{signer: signer, owner: rs, kind: "EchoRestore", controlled: true}
}

// sign signs a Job about to be created for the work.
func (w jobWork) sign(job *batchv1.Job) {
	w.signer.SignJob(job, w.kind, w.owner.GetUID())
}

// signed says whether the operator created job for the work: the
// signature verifies for the owner and, where the owner controls its Jobs,
// the owner controls it. Anyone may write a controller reference naming
// the owner; only the operator holds the key.
func (w jobWork) signed(job *batchv1.Job) bool {
	if w.controlled && !metav1.IsControlledBy(job, w.owner) {
		return false
	}
	return w.signer.VerifyJob(job, w.kind, w.owner.GetUID())
}

// ensureOwnedJob returns the Job named like want that the operator created
// for the work, creating want, controlled by the owner and signed, on first
// sight once mayCreate allows it (its error is returned as it is); created
// says whether this call created it. The Job's UID goes into jobs, the
// record in the owner's status. A Job of that name that is not the owner's
// (ownJob) is neither read nor touched: the error is then a *jobNotOwned.
// The deterministic name makes AlreadyExists a lock against a stale cache;
// the Job is then read from the API server (api), as is one the cache does
// not hold at all (it lacks the managed-by label).
func ensureOwnedJob(ctx context.Context, c client.Client, api client.Reader, scheme *runtime.Scheme, w jobWork,
	jobs *[]echov1alpha1.JobReference, want *batchv1.Job, mayCreate func(context.Context) error) (job *batchv1.Job, created bool, err error) {
	job = &batchv1.Job{}
	err = c.Get(ctx, client.ObjectKeyFromObject(want), job)
	if err == nil || !apierrors.IsNotFound(err) {
		if err != nil {
			return nil, false, fmt.Errorf("reading Job %s: %w", want.Name, err)
		}
		if err := acceptJob(w, jobs, job); err != nil {
			return nil, false, err
		}
		return job, false, nil
	}
	if err := mayCreate(ctx); err != nil {
		return nil, false, err
	}
	if err := controllerutil.SetControllerReference(w.owner, want, scheme); err != nil {
		return nil, false, fmt.Errorf("owning Job %s: %w", want.Name, err)
	}
	if created, err := createJob(ctx, c, api, w, jobs, want); err != nil || !created {
		return nil, false, err
	}
	return want, true, nil
}

// createJob signs want, creates it and records it in jobs. When a Job of
// its name exists already, created is false, and the error says whether
// that Job is the owner's: a *jobNotOwned when it is not; nil when it is
// the owner's own, which the cache has yet to show (its event brings the
// next reconcile).
func createJob(ctx context.Context, c client.Client, api client.Reader, w jobWork, jobs *[]echov1alpha1.JobReference,
	want *batchv1.Job) (created bool, _ error) {
	w.sign(want)
	err := c.Create(ctx, want)
	switch {
	case err == nil:
		recordJob(jobs, want)
		return true, nil
	case !apierrors.IsAlreadyExists(err):
		return false, fmt.Errorf("creating Job %s: %w", want.Name, err)
	}
	existing := &batchv1.Job{}
	if err := api.Get(ctx, client.ObjectKeyFromObject(want), existing); err != nil {
		// Gone meanwhile: the next reconcile creates it.
		return false, client.IgnoreNotFound(fmt.Errorf("reading Job %s: %w", want.Name, err))
	}
	return false, acceptJob(w, jobs, existing)
}

// ownJob says whether job is one the operator created for the work whose
// record of its Jobs is jobs: the Job whose UID is recorded there or, with
// none recorded under its name (the status write that follows the Job's
// creation was lost), one whose signature verifies for the work (signed).
// A Job anyone else created under that name, labels, template and a
// controller reference naming the owner alike, is not the owner's; nor is
// an unsigned Job whose UID is not recorded, such as one an earlier version
// of the operator created and did not record (see docs/backup-restore.md).
func ownJob(w jobWork, jobs []echov1alpha1.JobReference, job *batchv1.Job) bool {
	if ref := recordedJob(jobs, job.Name); ref != nil {
		return ref.UID == job.UID
	}
	return w.signed(job)
}

// acceptJob records job in jobs if it is the owner's (ownJob), and
// refuses it with a *jobNotOwned otherwise.
func acceptJob(w jobWork, jobs *[]echov1alpha1.JobReference, job *batchv1.Job) error {
	if !ownJob(w, *jobs, job) {
		return &jobNotOwned{namespace: job.Namespace, name: job.Name}
	}
	recordJob(jobs, job)
	return nil
}

// recordedJob is the record of the Job of that name, nil when there is none.
func recordedJob(jobs []echov1alpha1.JobReference, name string) *echov1alpha1.JobReference {
	for i := range jobs {
		if jobs[i].Name == name {
			return &jobs[i]
		}
	}
	return nil
}

// recordJob records job in jobs, in place of any earlier Job of its name.
func recordJob(jobs *[]echov1alpha1.JobReference, job *batchv1.Job) {
	if ref := recordedJob(*jobs, job.Name); ref != nil {
		ref.UID = job.UID
		return
	}
	*jobs = append(*jobs, echov1alpha1.JobReference{Name: job.Name, UID: job.UID})
}

// getOwnJob returns the owner's Job of that name (ownJob), nil when there is
// none; a Job of that name that is not the owner's is left alone, and is a
// *jobNotOwned.
func getOwnJob(ctx context.Context, c client.Reader, w jobWork, jobs []echov1alpha1.JobReference,
	namespace, name string) (*batchv1.Job, error) {
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Job %s: %w", name, err)
	}
	if !ownJob(w, jobs, job) {
		return nil, &jobNotOwned{namespace: namespace, name: name}
	}
	return job, nil
}

// jobNotOwned refuses a Job that has the name of a backup's or restore's
// Job but that the operator did not create for it. Anyone who may create
// Jobs in the namespace may create one of that name first, with the
// operator's labels and a template that looks like its own; reading its
// outcome would report work done that nothing did. The operator leaves it
// alone: it neither reads it, adopts it nor deletes it.
type jobNotOwned struct {
	namespace, name string
}

func (e *jobNotOwned) Error() string { return e.message("", "") }

// message names the Job and the owner it was refused for, described by of
// (such as "EchoBackup b1"), and says what to do; then, when given, what
// follows.
func (e *jobNotOwned) message(of, then string) string {
	if of == "" {
		of = "a backup or restore"
	}
	msg := fmt.Sprintf("Job %s in namespace %s has the name of %s's Job but was not created by echo-operator for it: "+
		"its outcome is not trusted, and it is left in place; find out who created it and delete it (kubectl delete job -n %s %s)",
		e.name, e.namespace, of, e.namespace, e.name)
	if then != "" {
		msg += "; " + then
	}
	return msg
}

// asJobNotOwned finds the refusal in err.
func asJobNotOwned(err error) (*jobNotOwned, bool) {
	var refused *jobNotOwned
	return refused, errors.As(err, &refused)
}

// removeOwnJob removes the owner's Job of that name, if the record has it
// and it is not already on its way out; a Job of that name that the
// operator did not create is left alone.
func removeOwnJob(ctx context.Context, c client.Client, namespace string, jobs []echov1alpha1.JobReference, name string) error {
	ref := recordedJob(jobs, name)
	if ref == nil {
		return nil
	}
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	if job.UID != ref.UID || !job.DeletionTimestamp.IsZero() {
		return nil
	}
	return removeJob(ctx, c, job)
}

// removeJob deletes a Job and, in the background, its pods (by default,
// deleting a Job through the API orphans them). The UID precondition
// spares a newer Job of the same name.
func removeJob(ctx context.Context, c client.Client, job *batchv1.Job) error {
	_, err := removeJobOnce(ctx, c, job)
	return err
}

// removeJobOnce is removeJob, and says whether this call deleted the Job (not
// when it was gone already, or was another Job by then).
func removeJobOnce(ctx context.Context, c client.Client, job *batchv1.Job) (bool, error) {
	err := c.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &job.UID})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return false, nil
	default:
		return false, fmt.Errorf("deleting Job %s: %w", job.Name, err)
	}
}

// jobFinished reads the terminal conditions of a Job.
func jobFinished(job *batchv1.Job) (complete, failed bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobFailed:
			failed = true
		}
	}
	return complete, failed
}

// jobFailureMessage is the Job's own account of its failure.
func jobFailureMessage(job *batchv1.Job) string {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			if c.Message != "" {
				return c.Message
			}
			return c.Reason
		}
	}
	return "unknown"
}

// jobFinishTime is when a Job reached its terminal condition.
func jobFinishTime(job *batchv1.Job) time.Time {
	if job.Status.CompletionTime != nil {
		return job.Status.CompletionTime.Time
	}
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// moverOutcome is what a data mover Job came to.
type moverOutcome int

const (
	// moverRunning: the Job has not finished.
	moverRunning moverOutcome = iota
	// moverAwaitingResult: the Job completed but no pod shows the mover's
	// result yet, within resultGracePeriod.
	moverAwaitingResult
	// moverSucceeded: the Job completed and the mover's result is read.
	moverSucceeded
	// moverFailed: the Job failed.
	moverFailed
	// moverSilent: the Job completed without a readable result.
	moverSilent
)

// moverJobResult is a data mover Job's outcome, and for a failed Job the
// mover's account (when it left one) and the Job's.
type moverJobResult struct {
	outcome moverOutcome
	// failure is the mover's report of a failed Job; nil when it left
	// none.
	failure *moverprotocol.Failure
	// jobMessage is the failed Job's own account.
	jobMessage string
	// unschedulable is, for a running Job, the scheduler's account of why
	// its pod waits for a node (podUnschedulable); empty when it does not.
	unschedulable string
}

// moverReason is the reason the mover reported, empty when it left none.
func (r moverJobResult) moverReason() moverprotocol.Reason {
	if r.failure == nil {
		return ""
	}
	return r.failure.Reason
}

// reasonUnreadable classifies a failure whose result is not the data
// mover's JSON (a mover killed mid-write, or the log tail Kubernetes falls
// back to).
const reasonUnreadable moverprotocol.Reason = "Unreadable"

// readMoverJob reads what a data mover Job came to, at now. A completed
// Job's result is decoded into result (a pointer to the subcommand's result
// type); with a nil result, completing is success enough.
//
// The pods are read from the cache, and from the API server (api) when the
// cache shows no result: the Job controller marks a Job finished only once
// it has seen its pods end, but the cache may see the Job's change before
// the pod's, and a failure read without the mover's report would lose its
// reason for good.
func readMoverJob(ctx context.Context, cache, api client.Reader, job *batchv1.Job, now time.Time, result any) (moverJobResult, error) {
	complete, failed := jobFinished(job)
	if !complete && !failed {
		return moverJobResult{outcome: moverRunning, unschedulable: podUnschedulable(ctx, cache, job)}, nil
	}
	if complete && result == nil {
		return moverJobResult{outcome: moverSucceeded}, nil
	}
	msg, ok, err := jobTerminationMessage(ctx, cache, job)
	if err == nil && !ok {
		msg, ok, err = jobTerminationMessage(ctx, api, job)
	}
	if err != nil {
		return moverJobResult{}, err
	}
	if failed {
		out := moverJobResult{outcome: moverFailed, jobMessage: jobFailureMessage(job)}
		if ok {
			out.failure = decodeFailure(msg)
		}
		return out, nil
	}
	switch {
	case !ok && now.Sub(jobFinishTime(job)) < resultGracePeriod:
		return moverJobResult{outcome: moverAwaitingResult}, nil
	case !ok:
		return moverJobResult{outcome: moverSilent}, nil
	}
	if failure, err := moverprotocol.Decode([]byte(msg), result); err != nil || failure != nil {
		return moverJobResult{outcome: moverSilent}, nil
	}
	return moverJobResult{outcome: moverSucceeded}, nil
}

// decodeFailure reads the failure a failed mover reported; a message that
// is not one is kept, as the mover's last words, under reasonUnreadable.
func decodeFailure(msg string) *moverprotocol.Failure {
	var ignored map[string]any
	failure, err := moverprotocol.Decode([]byte(msg), &ignored)
	switch {
	case err != nil:
		return &moverprotocol.Failure{Error: "the data mover ended with: " + truncateMessage(msg), Reason: reasonUnreadable}
	case failure == nil:
		// A result but a failed Job: the mover's account is not a
		// failure, so the Job's own stands.
		return nil
	}
	return failure
}

// jobTerminationMessage is the mover's termination message from the newest
// pod of the Job that ended with one. Only the Job's own pods answer
// (genuineMoverPod). The controller-uid label narrows the list, but anyone
// who may create pods in the namespace can set it, so a pod a tenant made
// to report a backup as complete is not read; nor are the pods of an
// earlier Job of the same name, or of the owner's other Jobs, which may
// linger.
func jobTerminationMessage(ctx context.Context, c client.Reader, job *batchv1.Job) (string, bool, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.ControllerUidLabel: string(job.UID)}); err != nil {
		return "", false, fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
	}
	var newest string
	var newestAt time.Time
	found := false
	for i := range pods.Items {
		if !genuineMoverPod(&pods.Items[i], job) {
			continue
		}
		msg, at, ok := terminationMessage(&pods.Items[i])
		if !ok || (found && !at.After(newestAt)) {
			continue
		}
		newest, newestAt, found = msg, at, true
	}
	return newest, found, nil
}

// genuineMoverPod says whether pod is one the Job made to run the data
// mover: its controller is the Job, by UID, and its mover container runs
// what the Job's template says, on the same volumes. The Job controller
// adopts any orphan pod its selector matches, so a controller reference
// alone does not tell the Job's pods from one a tenant labelled; a pod
// that ran the template's mover on the template's volumes reports what
// the Job's own pod would have.
func genuineMoverPod(pod *corev1.Pod, job *batchv1.Job) bool {
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.UID != job.UID || owner.Kind != "Job" {
		return false
	}
	got, want := moverRun(&pod.Spec), moverRun(&job.Spec.Template.Spec)
	return got != nil && want != nil && equality.Semantic.DeepEqual(got, want)
}

// moverRun is what decides what a pod's mover container does: its image,
// command, arguments, environment and mounts, and the volumes mounted.
// Nil when the pod has no mover container.
func moverRun(spec *corev1.PodSpec) *moverRunSpec {
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c.Name != moverprotocol.ContainerName {
			continue
		}
		run := &moverRunSpec{Image: c.Image, Command: c.Command, Args: c.Args, WorkingDir: c.WorkingDir,
			Env: c.Env, EnvFrom: c.EnvFrom, Mounts: c.VolumeMounts}
		for _, m := range c.VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name == m.Name {
					run.Volumes = append(run.Volumes, v)
				}
			}
		}
		return run
	}
	return nil
}

// moverRunSpec is the part of a pod that moverRun compares.
type moverRunSpec struct {
	Image      string
	Command    []string
	Args       []string
	WorkingDir string
	Env        []corev1.EnvVar
	EnvFrom    []corev1.EnvFromSource
	Mounts     []corev1.VolumeMount
	Volumes    []corev1.Volume
}

// terminationMessage is the termination message of a pod's mover
// container, and when it terminated.
func terminationMessage(pod *corev1.Pod) (string, time.Time, bool) {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != moverprotocol.ContainerName || cs.State.Terminated == nil || cs.State.Terminated.Message == "" {
			continue
		}
		return cs.State.Terminated.Message, cs.State.Terminated.FinishedAt.Time, true
	}
	return "", time.Time{}, false
}
