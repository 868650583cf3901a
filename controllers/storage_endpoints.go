package controllers

import (
	"cmp"
	"fmt"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/storagesecrets"
)

// Where bearer credentials may go. A ServiceAccount's token (audience
// sts.amazonaws.com, say) is accepted by the real STS, and an SSE-C key
// opens every object written with it: whoever runs the endpoint a backup
// names would get the role's credentials or the key. So the owner of the
// ServiceAccount or Secret lists the endpoints they may be sent to
// (StorageEndpointsAnnotation), or the operator's administrator lists
// them for every namespace (storagesecrets.ClusterEndpoints; the rules
// are internal/storagesecrets'), the token goes to an STS over https
// only, and anything else is refused before a Job names them.

// endpointNotAllowed refuses a data mover Job that would send a token or
// key to an endpoint its owner did not list.
type endpointNotAllowed struct {
	storagesecrets.EndpointNotAllowedError
}

func (e *endpointNotAllowed) reason() string { return echov1alpha1.ReasonEndpointNotAllowed }

func (e *endpointNotAllowed) message(then, _ string) string {
	msg := e.Error()
	if then != "" {
		msg += ", then " + then
	}
	return msg
}

// stsNotHTTPS refuses a data mover Job that would send a ServiceAccount's
// token to an STS over plain http, as an object admitted before the API
// required https could.
type stsNotHTTPS struct{ endpoint string }

func (e *stsNotHTTPS) Error() string { return e.message("", "") }

func (e *stsNotHTTPS) reason() string { return echov1alpha1.ReasonEndpointNotAllowed }

func (e *stsNotHTTPS) message(then, _ string) string {
	msg := fmt.Sprintf("storage.s3.identity would send the ServiceAccount's token to the STS at %s over plain http, where anyone on the way could take it: "+
		"set an https identity.stsEndpoint (or an https endpoint, where the STS is the storage's)", e.endpoint)
	if then != "" {
		msg += ", then " + then
	}
	return msg
}

// stsEndpoint is where s's identity exchanges its token: its STS
// endpoint, or the storage's.
func stsEndpoint(s *echov1alpha1.S3Storage) string {
	return cmp.Or(s.Identity.STSEndpoint, s.Endpoint)
}

// identityEndpointsAllowed checks that the token of sa goes to an https
// STS that cluster or sa lists, and the credentials it buys to a storage
// endpoint cluster or sa lists.
func identityEndpointsAllowed(sa *metav1.PartialObjectMetadata, s *echov1alpha1.S3Storage, cluster storagesecrets.ClusterEndpoints) error {
	sts := stsEndpoint(s)
	if u, err := url.Parse(sts); err != nil || !strings.EqualFold(u.Scheme, "https") {
		return &stsNotHTTPS{endpoint: sts}
	}
	for _, endpoint := range []string{sts, s.Endpoint} {
		if refused := cluster.Refusal("serviceaccount", sa, endpoint); refused != nil {
			return &endpointNotAllowed{*refused}
		}
	}
	return nil
}
