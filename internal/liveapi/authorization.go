package liveapi

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// accessCheck decides whether the user of a request may read what a live
// resource reveals: an EchoRevision shows an Echo's configuration, so its
// reader must be allowed to get Echoes in the namespace; a StoredBackup
// shows backups, so its reader must be allowed to get EchoBackups. The
// API server already checked the live resource itself; this second check
// keeps a role that grants the live group, and nothing else, from seeing
// more than the namespace's own objects show.
type accessCheck struct {
	authz authorizer.Authorizer
	// resource is the echo.dev resource that guards the live one.
	resource string
}

// allowed asks the authorizer (the API server, through a cached
// SubjectAccessReview) whether the request's user may get the guarding
// resource in namespace.
func (a accessCheck) allowed(ctx context.Context, namespace string) (bool, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return false, nil
	}
	decision, _, err := a.authz.Authorize(ctx, authorizer.AttributesRecord{
		User:            u,
		Verb:            "get",
		Namespace:       namespace,
		APIGroup:        echov1alpha1.GroupVersion.Group,
		APIVersion:      echov1alpha1.GroupVersion.Version,
		Resource:        a.resource,
		ResourceRequest: true,
	})
	if err != nil {
		return false, apierrors.NewInternalError(fmt.Errorf("checking access to %s in namespace %s: %w", a.resource, namespace, err))
	}
	return decision == authorizer.DecisionAllow, nil
}

// require fails with Forbidden unless the user may get the guarding
// resource in namespace.
func (a accessCheck) require(ctx context.Context, gr schema.GroupResource, name, namespace string) error {
	ok, err := a.allowed(ctx, namespace)
	if err != nil {
		return err
	}
	if !ok {
		return apierrors.NewForbidden(gr, name, fmt.Errorf("reading %s needs the right to get %s.%s in namespace %q", gr.Resource, a.resource, echov1alpha1.GroupVersion.Group, namespace))
	}
	return nil
}

// namespaceFilter remembers, for one list across namespaces, which
// namespaces the user may read.
type namespaceFilter struct {
	check   accessCheck
	allowed map[string]bool
}

func (a accessCheck) filter() *namespaceFilter {
	return &namespaceFilter{check: a, allowed: map[string]bool{}}
}

func (f *namespaceFilter) allows(ctx context.Context, namespace string) (bool, error) {
	if ok, seen := f.allowed[namespace]; seen {
		return ok, nil
	}
	ok, err := f.check.allowed(ctx, namespace)
	if err != nil {
		return false, err
	}
	f.allowed[namespace] = ok
	return ok, nil
}
