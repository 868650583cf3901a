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
// echov1alpha1.StorageEndpointsAnnotation. An endpoint matches an entry
// when both have the same origin: scheme, host (case aside) and port,
// the scheme's own (443, 80) when not given. Paths, queries and user
// information play no part; nothing is a wildcard; an entry that is no
// http(s) URL matches nothing.

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

// EndpointAllowed reports whether an object with these annotations allows
// its token or key to be sent to endpoint.
func EndpointAllowed(annotations map[string]string, endpoint string) bool {
	origin, err := Origin(endpoint)
	if err != nil {
		return false
	}
	for _, allowed := range AllowedEndpoints(annotations) {
		if allowed == origin {
			return true
		}
	}
	return false
}

// EndpointNotAllowedError refuses to send the token of a ServiceAccount or
// the SSE-C key of a Secret (Kind "serviceaccount" or "secret", as
// kubectl names them) to Endpoint, which the object does not list among
// Allowed.
type EndpointNotAllowedError struct {
	Kind, Namespace, Name, Endpoint string
	Allowed                         []string
}

func (e *EndpointNotAllowedError) Error() string {
	what := "the ServiceAccount %q does not allow its token to be sent to %s"
	if e.Kind == "secret" {
		what = "the Secret %q does not allow its SSE-C key to be sent to %s"
	}
	return fmt.Sprintf(what+": its annotation %s lists the endpoints it may go to (comma-separated, scheme://host[:port]); "+
		"if %s is this storage's, whoever owns the %s adds it (kubectl annotate %s -n %s %s --overwrite %s=%s); if not, correct the storage's endpoint",
		e.Name, e.Endpoint, echov1alpha1.StorageEndpointsAnnotation, e.Endpoint, e.Kind, e.Kind, e.Namespace, e.Name,
		echov1alpha1.StorageEndpointsAnnotation, strings.Join(append(slices.Clone(e.Allowed), e.Endpoint), ","))
}
