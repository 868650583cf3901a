package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/freeport"

	"k8s.io/apimachinery/pkg/util/wait"
)

// registryConfig is the registry's configuration: filesystem storage, plain
// HTTP on one loopback address, no access log (buildctl's pushes are
// logged by buildkitd).
const registryConfig = `version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %q
  delete:
    enabled: true
http:
  addr: %q
`

// Registry is a running registry.
type Registry struct {
	// Host is its address, 127.0.0.1:<port>: the host part of the image
	// references it serves, over plain HTTP.
	Host string
	d    *daemon
}

// StartRegistry runs the registry binary on a free port of 127.0.0.1 with
// its storage in dir/storage (kept: a registry started again on dir serves
// what was pushed before), and waits for it to answer.
func StartRegistry(ctx context.Context, binary, dir string) (*Registry, error) {
	if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o755); err != nil {
		return nil, err
	}
	var err error
	// A free port can be taken between finding it and the registry
	// binding it; another one then does.
	for attempt := 0; attempt < 3; attempt++ {
		var r *Registry
		if r, err = startRegistry(ctx, binary, dir); err == nil {
			return r, nil
		}
	}
	return nil, err
}

func startRegistry(ctx context.Context, binary, dir string) (*Registry, error) {
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	r := &Registry{Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, registryConfig, filepath.Join(dir, "storage"), r.Host), 0o644); err != nil {
		return nil, err
	}
	// No telemetry leaves the registry.
	env := append(os.Environ(), "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none",
		"OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none")
	if r.d, err = startDaemon("registry", filepath.Join(dir, "registry.log"), env, binary, "serve", config); err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if r.d.done() {
			return false, r.d.exitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.Host+"/v2/", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("waiting for the registry at %s: %w", r.Host, err), r.d.stop())
	}
	return r, nil
}

// Stop stops the registry; its storage stays.
func (r *Registry) Stop() error { return r.d.stop() }
