package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/release"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chart"
	"github.com/echo-operator/echo-operator/internal/releaserecords"
	"github.com/echo-operator/echo-operator/internal/releasetrust"
)

// backedUpConfig is the configuration a backup captures: enough to
// recreate the Echo and to know what was deployed for it. Its "echo"
// member is moverprotocol.ConfigEcho, which inspect hands back.
type backedUpConfig struct {
	Echo    backedUpEcho     `json:"echo"`
	Release *backedUpRelease `json:"release,omitempty"`
}

type backedUpEcho struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Metadata   backedUpMeta          `json:"metadata"`
	Spec       echov1alpha1.EchoSpec `json:"spec"`
}

type backedUpMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	UID         string            `json:"uid"`
	Generation  int64             `json:"generation"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type backedUpRelease struct {
	Name         string         `json:"name"`
	Revision     int            `json:"revision"`
	Chart        string         `json:"chart"`
	ChartVersion string         `json:"chartVersion"`
	AppVersion   string         `json:"appVersion,omitempty"`
	Values       map[string]any `json:"values"`
}

// lastAppliedAnnotation is left out: it repeats the spec.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// backupConfig renders the configuration of an Echo as JSON.
func backupConfig(ctx context.Context, cache, api client.Reader, verifier *releasetrust.Signer, echo *echov1alpha1.Echo) ([]byte, error) {
	annotations := map[string]string{}
	for k, v := range echo.Annotations {
		if k != lastAppliedAnnotation {
			annotations[k] = v
		}
	}
	cfg := backedUpConfig{Echo: backedUpEcho{
		APIVersion: echov1alpha1.GroupVersion.String(),
		Kind:       "Echo",
		Metadata: backedUpMeta{Name: echo.Name, Namespace: echo.Namespace, UID: string(echo.UID), Generation: echo.Generation,
			Labels: echo.Labels, Annotations: annotations},
		Spec: echo.Spec,
	}}
	rel, err := deployedRelease(ctx, cache, api, verifier, echo)
	if err != nil {
		return nil, err
	}
	if rel != nil && rel.Chart != nil && rel.Chart.Metadata != nil {
		cfg.Release = &backedUpRelease{Name: rel.Name, Revision: rel.Version, Chart: rel.Chart.Metadata.Name,
			ChartVersion: rel.Chart.Metadata.Version, AppVersion: rel.Chart.Metadata.AppVersion, Values: rel.Config}
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the configuration of Echo %s: %w", echo.Name, err)
	}
	return out, nil
}

// deployedRelease reads the deployed revision of an Echo's Helm release
// from its storage Secret; nil when there is none yet. The revision is
// found among the records the cache holds and verified (anyone who may
// write Secrets in the namespace can label any number of them as the
// release's records), then read by name from the API server.
func deployedRelease(ctx context.Context, cache, api client.Reader, verifier *releasetrust.Signer, echo *echov1alpha1.Echo) (*release.Release, error) {
	revisions, err := releaserecords.CachedReleaseRevisions(ctx, cache, echo.Namespace, chart.ReleaseName(echo.Name))
	if err != nil {
		return nil, fmt.Errorf("listing the release of Echo %s: %w", echo.Name, err)
	}
	var newest *releaserecords.Revision
	for i := range revisions {
		if revisions[i].Status == release.StatusDeployed && (newest == nil || revisions[i].Version > newest.Version) {
			newest = &revisions[i]
		}
	}
	if newest == nil {
		return nil, nil
	}
	return releaserecords.ReadRevision(ctx, api, verifier, echo.Namespace, newest.Record)
}
