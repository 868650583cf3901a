package storagesecrets

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The manager's flag, and the environment variable for installs whose
// arguments an administrator does not write (with OLM, the
// Subscription's spec.config.env sets it), that list the endpoints every
// ServiceAccount's token and SSE-C key may be sent to, whatever their
// annotation says. The flag's endpoints add to the variable's.
const (
	ClusterEndpointsFlag = "storage-endpoints"
	ClusterEndpointsEnv  = "STORAGE_ENDPOINTS"
)

// ClusterEndpoints are the origins the operator's administrator allows
// tokens and keys to be sent to in every namespace, besides those each
// ServiceAccount or Secret lists. The zero value allows none. It is a
// flag.Value of comma-separated http(s) origins (the flag may also be
// repeated); unlike the annotation's, an entry that is not one is an
// error, not left out: only an administrator writes it, and an endpoint
// dropped without a word would be a refusal nobody can explain.
type ClusterEndpoints struct{ origins []string }

// ParseClusterEndpoints parses value as ClusterEndpointsEnv holds it.
func ParseClusterEndpoints(value string) (ClusterEndpoints, error) {
	var c ClusterEndpoints
	return c, c.Set(value)
}

func (c *ClusterEndpoints) String() string {
	if c == nil {
		return ""
	}
	return strings.Join(c.origins, ",")
}

// Set parses value and appends its origins.
func (c *ClusterEndpoints) Set(value string) error {
	for _, entry := range strings.Split(value, ",") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		origin, err := clusterOrigin(entry)
		if err != nil {
			return fmt.Errorf("%q is not a storage endpoint (scheme://host[:port], http or https, no wildcards): %w", entry, err)
		}
		c.origins = append(c.origins, origin)
	}
	return nil
}

// clusterOrigin is entry's Origin, when entry is an origin and nothing
// more: what the annotation would ignore (a path, a query, user
// information) or match with nothing (a wildcard) is refused.
func clusterOrigin(entry string) (string, error) {
	origin, err := Origin(entry)
	if err != nil {
		return "", err
	}
	u, _ := url.Parse(entry) // Origin parsed it
	port, _ := strconv.Atoi(u.Port())
	switch {
	case strings.Contains(u.Host, "*"):
		return "", fmt.Errorf("nothing is a wildcard: list each endpoint")
	case u.Port() != "" && (port < 1 || port > 65535):
		return "", fmt.Errorf("port %s is out of range", u.Port())
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("only its scheme, host and port count: write %s", origin)
	}
	return origin, nil
}

// Allows reports whether the token or key of an object with these
// annotations may be sent to endpoint: the administrator or the object
// lists it.
func (c ClusterEndpoints) Allows(annotations map[string]string, endpoint string) bool {
	origin, err := Origin(endpoint)
	if err != nil {
		return false
	}
	return slices.Contains(c.origins, origin) || slices.Contains(AllowedEndpoints(annotations), origin)
}

// Refusal is nil when the token or key of obj (kind "serviceaccount" or
// "secret", as kubectl names them) may be sent to endpoint, else the
// refusal that says how to allow it.
func (c ClusterEndpoints) Refusal(kind string, obj metav1.Object, endpoint string) *EndpointNotAllowedError {
	if c.Allows(obj.GetAnnotations(), endpoint) {
		return nil
	}
	return &EndpointNotAllowedError{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Endpoint: endpoint,
		Allowed: AllowedEndpoints(obj.GetAnnotations())}
}
