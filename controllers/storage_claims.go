package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
)

// The claims a data mover Job mounts. A Job's pod may mount any claim of
// its namespace, read-write: without these checks a user who may create
// EchoBackups but not pods could name another workload's claim as backup
// storage (and restore it into an Echo of theirs, which serves it), or
// have a backup read, a restore overwrite, a claim that only has the name
// of an Echo's data claim. So a claim named as storage opted in
// (BackupStorageClaimLabel), and an Echo's data claim is mounted only
// when the Echo's release owns it.

// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get

// claimNotOptedIn refuses a data mover Job whose storage names a claim
// that does not exist or lacks BackupStorageClaimLabel.
type claimNotOptedIn struct {
	namespace, claim string
	missing          bool
}

func (e *claimNotOptedIn) Error() string { return e.message("", "") }

func (e *claimNotOptedIn) reason() string { return echov1alpha1.ReasonClaimNotOptedIn }

func (e *claimNotOptedIn) message(then, _ string) string {
	label := fmt.Sprintf("kubectl label pvc -n %s %s %s=true", e.namespace, e.claim, echov1alpha1.BackupStorageClaimLabel)
	msg := fmt.Sprintf("PersistentVolumeClaim %q of storage.persistentVolumeClaim has no label %s=true, which echo-operator requires before "+
		"a data mover mounts a claim as backup storage: if it is meant to hold backups, label it (%s); if not, name the claim that is",
		e.claim, echov1alpha1.BackupStorageClaimLabel, label)
	if e.missing {
		msg = fmt.Sprintf("PersistentVolumeClaim %q of storage.persistentVolumeClaim does not exist in namespace %s: create it and label it (%s), or name another",
			e.claim, e.namespace, label)
	}
	if then != "" {
		msg += ", then " + then
	}
	return msg
}

// claimOptedIn checks that the claim of pvc, if any, exists and carries
// BackupStorageClaimLabel. It reads the claim's metadata from the API
// server (api): the cache holds only the chart's claims.
func claimOptedIn(ctx context.Context, api client.Reader, namespace string, pvc *echov1alpha1.PVCStorage) error {
	if pvc == nil {
		return nil
	}
	claim, err := claimMetadata(ctx, api, namespace, pvc.ClaimName)
	switch {
	case err != nil:
		return err
	case claim == nil:
		return &claimNotOptedIn{namespace: namespace, claim: pvc.ClaimName, missing: true}
	case claim.Labels[echov1alpha1.BackupStorageClaimLabel] != "true":
		return &claimNotOptedIn{namespace: namespace, claim: pvc.ClaimName}
	}
	return nil
}

// claimMetadata reads the metadata of a claim; nil when it does not exist.
func claimMetadata(ctx context.Context, api client.Reader, namespace, name string) (*metav1.PartialObjectMetadata, error) {
	claim := &metav1.PartialObjectMetadata{}
	claim.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"))
	err := api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, claim)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading PersistentVolumeClaim %s: %w", name, err)
	}
	return claim, nil
}

// dataClaimNotOwned refuses a backup or restore Job of an Echo whose data
// claim is not its release's.
type dataClaimNotOwned struct {
	namespace, claim, echo string
}

func (e *dataClaimNotOwned) Error() string { return e.message("", "") }

func (e *dataClaimNotOwned) reason() string { return echov1alpha1.ReasonDataClaimNotOwned }

func (e *dataClaimNotOwned) message(then, _ string) string {
	msg := fmt.Sprintf("PersistentVolumeClaim %q is not the data claim of Echo %s: the Echo's release did not create it "+
		"(its annotations %s and %s do not name release %s of namespace %s, or its controller is not this Echo), so it may hold another workload's data; "+
		"rename or remove that claim so that the release creates the Echo's own (its annotations and owner references show who made it)",
		e.claim, e.echo, chart.ReleaseNameAnnotation, chart.ReleaseNamespaceAnnotation, chart.ReleaseName(e.echo), e.namespace)
	if then != "" {
		msg += ", then " + then
	}
	return msg
}

// dataClaimOwned checks that the data claim of echo, when it keeps data,
// is its release's: Helm's ownership annotations name the Echo's release
// and namespace, and its controller reference is that Echo, by UID (the
// reconciler sets it on every object of the release). Both mark a claim
// the release made; whoever may edit a claim can copy them onto it, but
// could mount it in a pod of their own anyway: the check keeps those who
// may only write Echoes and backups from reaching claims they cannot. A
// claim that does not exist yet passes: the Echo's release is about to
// create it (an install interrupted by a restart, a backup asked for with
// the Echo), and the Job's pod starts once it exists, as it always has; a
// claim made meanwhile by anyone else is one they could mount themselves.
func dataClaimOwned(ctx context.Context, api client.Reader, echo *echov1alpha1.Echo) error {
	if !persistent(echo) {
		return nil
	}
	name := dataClaimName(echo)
	claim, err := claimMetadata(ctx, api, echo.Namespace, name)
	switch {
	case err != nil:
		return err
	case claim == nil:
		return nil
	}
	owner := metav1.GetControllerOf(claim)
	if !chart.OwnedByRelease(claim.Annotations, echo.Namespace, chart.ReleaseName(echo.Name)) ||
		owner == nil || owner.UID != echo.UID {
		return &dataClaimNotOwned{namespace: echo.Namespace, claim: name, echo: echo.Name}
	}
	return nil
}

// dataClaimCheck is dataClaimOwned as ensureOwnedJob's check before it
// creates a Job that mounts the Echo's data.
func dataClaimCheck(api client.Reader, echo *echov1alpha1.Echo) func(context.Context) error {
	return func(ctx context.Context) error {
		return dataClaimOwned(ctx, api, echo)
	}
}
