package helmreconciler

import (
	"fmt"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/client-go/discovery"
)

// capabilitiesTTL is how long the cluster's discovered capabilities are
// reused. A chart that tests for an API (.Capabilities.APIVersions.Has)
// sees one installed or removed within this time.
const capabilitiesTTL = time.Minute

// capabilitiesCache discovers what Helm tells a chart of the cluster (its
// version and API versions) once per capabilitiesTTL for the process.
// Helm itself rediscovers them for every install, upgrade and render
// (/version, /api, /apis): three requests an Echo, in a rollout of
// thousands.
type capabilitiesCache struct {
	discovery discovery.DiscoveryInterface
	now       func() time.Time

	mu   sync.Mutex
	caps *chartutil.Capabilities
	at   time.Time
}

func newCapabilitiesCache(dc discovery.DiscoveryInterface) *capabilitiesCache {
	return &capabilitiesCache{discovery: dc, now: time.Now}
}

// get returns the capabilities, discovering them when the last discovery
// is older than capabilitiesTTL. Callers get their own copy: Helm's
// actions may change theirs.
func (c *capabilitiesCache) get() (*chartutil.Capabilities, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps == nil || c.now().Sub(c.at) >= capabilitiesTTL {
		caps, err := discoverCapabilities(c.discovery)
		if err != nil {
			return nil, err
		}
		c.caps, c.at = caps, c.now()
	}
	return c.caps.Copy(), nil
}

// discoverCapabilities asks the API server as Helm's own discovery does.
// A group an unavailable APIService serves is left out, as Helm leaves it.
func discoverCapabilities(dc discovery.DiscoveryInterface) (*chartutil.Capabilities, error) {
	version, err := dc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the Kubernetes version: %w", err)
	}
	apiVersions, err := action.GetVersionSet(dc)
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the API versions of the cluster: %w", err)
	}
	return &chartutil.Capabilities{
		APIVersions: apiVersions,
		KubeVersion: chartutil.KubeVersion{Version: version.GitVersion, Major: version.Major, Minor: version.Minor},
		HelmVersion: chartutil.DefaultCapabilities.HelmVersion,
	}, nil
}
