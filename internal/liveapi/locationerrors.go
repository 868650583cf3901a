package liveapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/backupstore"
	"github.com/echo-operator/echo-operator/internal/egress"
)

// What a tenant is told when the storage of a location cannot be listed.
// The manager connects to endpoints tenants choose, from its own pod: the
// answer must not make it a probe of what the tenant cannot reach itself
// (is a port closed or filtered, does a host exist, what does a service
// say), so it is one of a few fixed outcomes and never quotes the
// endpoint's answer. The data mover Jobs, which run in the tenant's own
// namespace and network, keep their detailed errors; the manager's log
// has the detail, at V(1).
const (
	outcomeUnreachable  = "the storage could not be reached (no connection, no answer in time, or a TLS certificate that is not trusted)"
	outcomeAccessDenied = "access denied: the storage refused the credentials or the request"
	outcomeNoBucket     = "the bucket does not exist"
	outcomeEncryption   = "the storage refused the location's encryption (its KMS key, or the SSE-C key of the objects)"
	outcomeNotS3        = "the endpoint's answer is not an S3 listing"
)

var listingLog = logf.Log.WithName("live-api")

// listingError is the 503 Service Unavailable of a location whose storage
// could not be listed.
func listingError(loc *echov1alpha1.EchoBackupLocation, err error) error {
	listingLog.V(1).Info("Listing the storage of an EchoBackupLocation failed",
		"location", loc.Namespace+"/"+loc.Name, "error", err.Error())
	return apierrors.NewServiceUnavailable(fmt.Sprintf("EchoBackupLocation %s/%s: %s", loc.Namespace, loc.Name, publicReason(err)))
}

// publicReason is the outcome of err a tenant may read: the egress
// policy's refusal (the rule, and how an administrator allows it); an
// error of the location itself (its Secrets, its endpoint's syntax); an
// answer past a listing's bounds (which bound, never what was sent);
// access denied; no such bucket; an answer that is no S3 listing, with
// only the class of its HTTP status; or not reached, which covers a
// refused connection, a timeout, a name that does not resolve and a TLS
// failure alike.
func publicReason(err error) string {
	var refused *egress.RefusedError
	var local *locationError
	var tooLarge *backupstore.ResponseTooLargeError
	var tooManyKeys *backupstore.PageTooLargeError
	switch {
	case errors.As(err, &refused):
		return refused.Error()
	case errors.As(err, &local):
		return local.Error()
	case errors.As(err, &tooLarge):
		return tooLarge.Error()
	case errors.As(err, &tooManyKeys):
		return tooManyKeys.Error()
	case errors.Is(err, backupstore.ErrEncryption):
		return outcomeEncryption
	case errors.Is(err, backupstore.ErrAccessDenied):
		return outcomeAccessDenied
	case errors.Is(err, backupstore.ErrBucketNotFound):
		return outcomeNoBucket
	}
	if status := backupstore.HTTPStatus(err); status > 0 {
		return fmt.Sprintf("%s (HTTP %dxx)", outcomeNotS3, status/100)
	}
	var transport *url.Error
	if errors.Is(err, backupstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, context.Canceled) || errors.As(err, &transport) {
		return outcomeUnreachable
	}
	return outcomeNotS3
}

// locationError is an error of the location itself, found before the
// storage is asked anything: its text is the tenant's own input and the
// API server's answers about the tenant's namespace, and is kept.
type locationError struct{ err error }

func (e *locationError) Error() string { return e.err.Error() }
func (e *locationError) Unwrap() error { return e.err }
