package imagebuild

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// buildkitdConfig is buildkitd's configuration: docker.io, gcr.io, ghcr.io
// and quay.io mirrored to the local registry, which is reached over plain HTTP;
// garbage collection of the persistent layer cache; no history kept for
// long; no devices (CDI); the socket buildctl may send traces to beside
// buildkitd's own (not in /run/buildkit). The worker's flags (runc, the
// host's network) are on the command line.
const buildkitdConfig = `[log]
  format = "text"
[cdi]
  disabled = true
[otel]
  socketPath = "{{sockDir}}/otel-grpc.sock"
[worker.oci]
  gc = true
  maxUsedSpace = "10GB"
[history]
  maxAge = 3600
  maxEntries = 20
[registry."docker.io"]
  mirrors = ["{{registry}}"]
[registry."gcr.io"]
  mirrors = ["{{registry}}"]
[registry."ghcr.io"]
  mirrors = ["{{registry}}"]
[registry."quay.io"]
  mirrors = ["{{registry}}"]
[registry."{{registry}}"]
  http = true
`

// buildkitd is a running buildkitd and the buildctl that drives it.
type buildkitd struct {
	d        *daemon
	addr     string // unix://<socket>
	buildctl string
	logDir   string
	builds   int
}

// startBuildkitd runs buildkitd rootful with its OCI worker only: runc
// runs the steps, on the host's network (so they reach the module proxy
// on loopback), with root as its state. sockDir holds its socket (a short
// path: a unix socket's is bounded), logDir its log and the builds'.
func startBuildkitd(ctx context.Context, b Binaries, root, registry, sockDir, logDir string) (*buildkitd, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	config := filepath.Join(sockDir, "buildkitd.toml")
	if err := os.WriteFile(config, []byte(strings.NewReplacer("{{registry}}", registry, "{{sockDir}}", sockDir).Replace(buildkitdConfig)), 0o644); err != nil {
		return nil, err
	}
	bk := &buildkitd{addr: "unix://" + filepath.Join(sockDir, "buildkitd.sock"), buildctl: b.Buildctl, logDir: logDir}
	env := append(os.Environ(), "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none", "OTEL_METRICS_EXPORTER=none")
	var err error
	bk.d, err = startDaemon("buildkitd", filepath.Join(logDir, "buildkitd.log"), env, b.Buildkitd,
		"--config", config, "--root", root, "--addr", bk.addr,
		"--oci-worker=true", "--oci-worker-binary", b.Runc, "--oci-worker-net", "host",
		"--oci-worker-snapshotter", "overlayfs", "--containerd-worker=false")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if bk.d.done() {
			return false, bk.d.exitError()
		}
		return exec.CommandContext(ctx, bk.buildctl, "--addr", bk.addr, "debug", "workers").Run() == nil, nil
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("waiting for buildkitd: %w", err), bk.d.stop())
	}
	return bk, nil
}

func (bk *buildkitd) stop() error {
	if bk == nil {
		return nil
	}
	return bk.d.stop()
}

// Build is what to build: a Dockerfile, its context and the image
// reference to push the result to.
type Build struct {
	// Context is the build context's directory; its .dockerignore (or
	// <Dockerfile>.dockerignore beside the Dockerfile) applies.
	Context string
	// Dockerfile is the Dockerfile's path; empty means Context/Dockerfile.
	Dockerfile string
	// DockerfileText, when set, is the Dockerfile itself, in place of
	// Dockerfile: e.g. a few lines that COPY a binary from a named context.
	DockerfileText string
	// Target is the stage to build; empty means the last.
	Target string
	// Platforms are the platforms to build for, e.g. linux/amd64 and
	// linux/arm64: with more than one, the pushed image is an OCI index of
	// a manifest per platform. Empty means this machine's. Stages FROM
	// --platform=$BUILDPLATFORM run here and cross-compile; any other
	// stage of a foreign platform must not RUN (no emulation here).
	Platforms []string
	// BuildArgs are the --build-arg values.
	BuildArgs map[string]string
	// Contexts are named contexts, directories that the Dockerfile names
	// in COPY --from=<name> and FROM <name>.
	Contexts map[string]string
	// Ref is the image reference to push to, e.g. 127.0.0.1:5000/minio:test.
	Ref string
	// Archive, when set, is where the image goes instead, as a
	// docker-archive named Ref (for ctr images import): nothing is pushed.
	Archive string
	// RewriteTimestamps dates every file of the image's new layers
	// SOURCE_DATE_EPOCH (a build argument; 0 when unset), for an image
	// whose digest depends on its contents only.
	RewriteTimestamps bool
}

// build runs buildctl for b, its progress in a log of its own, and returns
// the digest of the pushed image (of its index, for several platforms).
func (bk *buildkitd) build(ctx context.Context, b Build) (string, error) {
	if b.Context == "" || b.Ref == "" {
		return "", errors.New("a build needs a context and a reference")
	}
	bk.builds++
	name := strings.NewReplacer("/", "_", ":", "_").Replace(b.Ref)
	dockerfile := b.Dockerfile
	switch {
	case b.DockerfileText != "":
		dir := filepath.Join(bk.logDir, fmt.Sprintf("build-%02d-%s.dockerfile", bk.builds, name))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
		dockerfile = filepath.Join(dir, "Dockerfile")
		if err := os.WriteFile(dockerfile, []byte(b.DockerfileText), 0o644); err != nil {
			return "", err
		}
	case dockerfile == "":
		dockerfile = filepath.Join(b.Context, "Dockerfile")
	}
	log := filepath.Join(bk.logDir, fmt.Sprintf("build-%02d-%s.log", bk.builds, name))
	metadata := filepath.Join(bk.logDir, fmt.Sprintf("build-%02d-%s.json", bk.builds, name))
	output := "type=image,name=" + b.Ref + ",push=true"
	if b.Archive != "" {
		output = "type=docker,name=" + b.Ref + ",dest=" + b.Archive
	}
	if b.RewriteTimestamps {
		output += ",rewrite-timestamp=true"
	}
	args := []string{"--addr", bk.addr, "build", "--progress", "plain", "--frontend", "dockerfile.v0",
		"--local", "context=" + b.Context, "--local", "dockerfile=" + filepath.Dir(dockerfile),
		"--opt", "filename=" + filepath.Base(dockerfile),
		"--output", output, "--metadata-file", metadata}
	if b.Target != "" {
		args = append(args, "--opt", "target="+b.Target)
	}
	if len(b.Platforms) > 0 {
		args = append(args, "--opt", "platform="+strings.Join(b.Platforms, ","))
	}
	for _, k := range slices.Sorted(maps.Keys(b.BuildArgs)) {
		args = append(args, "--opt", "build-arg:"+k+"="+b.BuildArgs[k])
	}
	for _, k := range slices.Sorted(maps.Keys(b.Contexts)) {
		args = append(args, "--local", k+"="+b.Contexts[k], "--opt", "context:"+k+"=local:"+k)
	}
	out, err := os.Create(log)
	if err != nil {
		return "", err
	}
	defer func() { _ = out.Close() }()
	cmd := exec.CommandContext(ctx, bk.buildctl, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s: %w (log %s):\n%s", b.Ref, err, log, logTail(log))
	}
	data, err := os.ReadFile(metadata)
	if err != nil {
		return "", err
	}
	var md struct {
		Digest string `json:"containerimage.digest"`
	}
	if err := json.Unmarshal(data, &md); err != nil || (md.Digest == "" && b.Archive == "") {
		return "", fmt.Errorf("buildctl's metadata of %s has no image digest (%w): %s", b.Ref, err, data)
	}
	return md.Digest, nil
}
