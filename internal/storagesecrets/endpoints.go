package storagesecrets

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

// The endpoints a ServiceAccount's token or an SSE-C key may be sent to:
// those the owner of the ServiceAccount or Secret listed in
// echov1alpha1.StorageEndpointsAnnotation, and those the operator's
// administrator allows for every namespace (ClusterEndpoints). An
// endpoint matches an entry when both have the same origin: scheme, host
// (case aside) and port, the scheme's own (443, 80) when not given.
// Paths, queries and user information play no part; nothing is a
// wildcard; an entry of the annotation that is no http(s) URL matches
// nothing, and one of the administrator's stops the manager.

// Origin is endpoint's scheme://host:port, lower-case, with the scheme's
// port when it has none.
func Origin(endpoint string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil {
		return "", fmt.Errorf("not a URL: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	switch {
	case scheme != "http" && scheme != "https":
		return "", fmt.Errorf("not an http or https URL")
	case u.Hostname() == "":
		return "", fmt.Errorf("no host")
	case port == "" && scheme == "https":
		port = "443"
	case port == "":
		port = "80"
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), nil
}

// AllowedEndpoints are the origins annotations allow, in order; entries
// that are no http(s) URL are left out.
func AllowedEndpoints(annotations map[string]string) []string {
	var out []string
	for _, entry := range strings.Split(annotations[echov1alpha1.StorageEndpointsAnnotation], ",") {
		if origin, err := Origin(entry); err == nil {
			out = append(out, origin)
		}
	}
	return out
}

// EndpointNotAllowedError refuses to send the token of a ServiceAccount or
// the SSE-C key of a Secret (Kind "serviceaccount" or "secret", as
// kubectl names them) to Endpoint, which neither the object (its list is
// Allowed) nor the operator's administrator (ClusterEndpoints) lists.
type EndpointNotAllowedError struct {
	Kind, Namespace, Name, Endpoint string
	Allowed                         []string
}

func (e *EndpointNotAllowedError) Error() string {
	what := "the ServiceAccount %q does not allow its token to be sent to %s"
	if e.Kind == "secret" {
		what = "the Secret %q does not allow its SSE-C key to be sent to %s"
	}
	return fmt.Sprintf(what+", nor does the operator's administrator: its annotation %s lists the endpoints it may go to (comma-separated, scheme://host[:port]), "+
		"and the operator's setting %s those allowed in every namespace; if %s is this storage's, whoever owns the %s adds it (kubectl annotate %s -n %s %s --overwrite %s=%s), "+
		"or the operator's administrator adds it to %s (--%s) on the operator's Deployment; if not, correct the storage's endpoint",
		e.Name, e.Endpoint, echov1alpha1.StorageEndpointsAnnotation, ClusterEndpointsEnv, e.Endpoint, e.Kind, e.Kind, e.Namespace, e.Name,
		echov1alpha1.StorageEndpointsAnnotation, strings.Join(append(slices.Clone(e.Allowed), e.Endpoint), ","), ClusterEndpointsEnv, ClusterEndpointsFlag)
}
