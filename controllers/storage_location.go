package controllers

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// Storage that refers to an EchoBackupLocation (storage.locationRef) is
// resolved into the location's settings when a data mover Job is built:
// the Job carries the endpoint, bucket, prefix and Secret references of
// the location as it is then.

// locationUnavailable refuses storage whose EchoBackupLocation does not
// exist, or, for a new artifact, is being deleted.
type locationUnavailable struct {
	namespace, name string
	deleting        bool
}

func (e *locationUnavailable) Error() string { return e.message("") }

// message says what is wrong with the location and how to fix it, then,
// when given, what follows (the refused operation does not go on by itself).
func (e *locationUnavailable) message(then string) string {
	var msg string
	if e.deleting {
		msg = fmt.Sprintf("EchoBackupLocation %q of namespace %s is being deleted, so no new backup goes there: name another location in storage.locationRef", e.name, e.namespace)
	} else {
		msg = fmt.Sprintf("EchoBackupLocation %q does not exist in namespace %s: create it (kubectl get echobackuplocations lists those that exist) or name another in storage.locationRef", e.name, e.namespace)
	}
	if then != "" {
		msg += ", then " + then
	}
	return msg
}

// asLocationUnavailable finds the refusal in err.
func asLocationUnavailable(err error) (*locationUnavailable, bool) {
	var refused *locationUnavailable
	return refused, errors.As(err, &refused)
}

// resolveStorage returns the storage s names, inline: s itself, or the S3
// storage of the EchoBackupLocation of namespace that s.locationRef names,
// with that location (nil for inline storage). A location the cache does
// not have yet is read from the API server (api), so that storage named
// just after its location is created is not refused on a stale cache. A
// missing location is a *locationUnavailable.
func resolveStorage(ctx context.Context, cached, api client.Reader, namespace string, s echov1alpha1.BackupStorage) (echov1alpha1.BackupStorage, *echov1alpha1.EchoBackupLocation, error) {
	name := s.LocationName()
	if name == "" {
		return s, nil, nil
	}
	loc := &echov1alpha1.EchoBackupLocation{}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	err := cached.Get(ctx, key, loc)
	if apierrors.IsNotFound(err) {
		err = api.Get(ctx, key, loc)
	}
	switch {
	case apierrors.IsNotFound(err):
		return s, nil, &locationUnavailable{namespace: namespace, name: name}
	case err != nil:
		return s, nil, fmt.Errorf("reading EchoBackupLocation %s: %w", name, err)
	}
	s3 := loc.Spec.S3
	return echov1alpha1.BackupStorage{S3: &s3}, loc, nil
}

// newArtifactCheck is the check before a Job that writes a new artifact is
// created: its location, if any, is not being deleted (the artifact would
// hold the deletion back), and what the resolved storage names opted in
// (storageOptedIn, with cluster, the administrator's endpoints).
func newArtifactCheck(api client.Reader, namespace string, loc *echov1alpha1.EchoBackupLocation, resolved echov1alpha1.BackupStorage,
	cluster storagesecrets.ClusterEndpoints) func(context.Context) error {
	return func(ctx context.Context) error {
		if loc != nil && !loc.DeletionTimestamp.IsZero() {
			return &locationUnavailable{namespace: namespace, name: loc.Name, deleting: true}
		}
		return storageOptedIn(ctx, api, namespace, resolved, cluster)
	}
}
