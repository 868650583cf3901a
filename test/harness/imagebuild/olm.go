package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The images of Operator Lifecycle Manager (OLM) and of the operator
// registry's opm, under the names their releases publish on quay.io, which
// the local registry mirrors, and the stand-ins of the base images their
// Dockerfiles start from.
const (
	// OLMRepo is quay.io/operator-framework/olm: olm, catalog,
	// package-server, copy-content and cpb.
	OLMRepo = "operator-framework/olm"
	// OPMRepo is quay.io/operator-framework/opm: opm and grpc_health_probe.
	OPMRepo = "operator-framework/opm"
	// StaticDebugTag stands in for gcr.io/distroless/static:debug: the
	// static image with busybox in /busybox, run as root.
	StaticDebugTag = "debug"
	// HealthProbeRepo stands in for ghcr.io/grpc-ecosystem/grpc-health-probe,
	// built by ko: the binary in /ko-app.
	HealthProbeRepo = "grpc-ecosystem/grpc-health-probe"
)

// OLMSources are the inputs of OLM's and opm's images as
// hack/build-olm.sh leaves them (`make olm`), which the Makefile passes as
// environment variables.
type OLMSources struct {
	// OLMDir holds OLM's binaries and image/Dockerfile, its Dockerfile;
	// its name is OLM's version (bin/olm/v0.46.0).
	OLMDir string `env:"OLM_DIR"`
	// OPM is opm, static; OPMImageDir holds opm's image Dockerfile and the
	// nsswitch.conf it copies. OPM's directory's name is opm's version.
	OPM         string `env:"OPM"`
	OPMImageDir string `env:"OPM_IMAGE_DIR"`
	// GRPCHealthProbe is grpc_health_probe, static; its directory's name
	// is its version.
	GRPCHealthProbe string `env:"GRPC_HEALTH_PROBE"`
}

// LocateOLMSources reads OLMSources from the environment.
func LocateOLMSources() (OLMSources, error) {
	s := OLMSources{OLMDir: os.Getenv("OLM_DIR"), OPM: os.Getenv("OPM"), OPMImageDir: os.Getenv("OPM_IMAGE_DIR"),
		GRPCHealthProbe: os.Getenv("GRPC_HEALTH_PROBE")}
	for env, p := range map[string]string{"OLM_DIR": s.OLMDir, "OPM": s.OPM, "OPM_IMAGE_DIR": s.OPMImageDir, "GRPC_HEALTH_PROBE": s.GRPCHealthProbe} {
		if p == "" {
			return s, fmt.Errorf("$%s is not set: run `make olm`, or the tests through make", env)
		}
		if _, err := os.Stat(p); err != nil {
			return s, fmt.Errorf("$%s: %w", env, err)
		}
	}
	return s, nil
}

// OLMVersion and OPMVersion are the versions of OLM and opm, as their
// directories name them.
func (s OLMSources) OLMVersion() string { return filepath.Base(s.OLMDir) }
func (s OLMSources) OPMVersion() string { return filepath.Base(filepath.Dir(s.OPM)) }

// healthProbeVersion is grpc_health_probe's version.
func (s OLMSources) healthProbeVersion() string {
	return filepath.Base(filepath.Dir(s.GRPCHealthProbe))
}

// OLMImages are the references, under quay.io, of the images BuildOLM
// pushed.
type OLMImages struct {
	OLM, OPM string
}

// BuildOLM builds OLM's image and opm's from the Dockerfiles of their
// releases, with the binaries built here, and pushes them under the names
// of quay.io, which the registry mirrors: first the stand-ins of the
// images those Dockerfiles start from.
func (e *Env) BuildOLM(ctx context.Context, s OLMSources) (OLMImages, error) {
	if err := e.pushOLMBases(ctx, s); err != nil {
		return OLMImages{}, fmt.Errorf("the stand-ins of OLM's base images: %w", err)
	}
	imgs := OLMImages{OLM: "quay.io/" + OLMRepo + ":" + s.OLMVersion(), OPM: "quay.io/" + OPMRepo + ":" + s.OPMVersion()}
	if _, err := e.Build(ctx, Build{Context: s.OLMDir, Dockerfile: filepath.Join(s.OLMDir, "image", "Dockerfile"),
		Ref: e.Ref(OLMRepo, s.OLMVersion())}); err != nil {
		return OLMImages{}, err
	}
	// opm's Dockerfile copies the binary GoReleaser leaves in
	// <os>/<arch>/opm, and nsswitch.conf, from its context.
	dir, err := os.MkdirTemp(e.opts.WorkDir, "opm-")
	if err != nil {
		return OLMImages{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := os.MkdirAll(filepath.Join(dir, "linux", "amd64"), 0o755); err != nil {
		return OLMImages{}, err
	}
	if err := errors.Join(copyFile(s.OPM, filepath.Join(dir, "linux", "amd64", "opm"), 0o755),
		copyFile(filepath.Join(s.OPMImageDir, "nsswitch.conf"), filepath.Join(dir, "nsswitch.conf"), 0o644)); err != nil {
		return OLMImages{}, err
	}
	_, err = e.Build(ctx, Build{Context: dir, Dockerfile: filepath.Join(s.OPMImageDir, "goreleaser.opm.Dockerfile"),
		BuildArgs: map[string]string{"GRPC_HEALTH_PROBE_VERSION": s.healthProbeVersion()}, Ref: e.Ref(OPMRepo, s.OPMVersion())})
	if err != nil {
		return OLMImages{}, err
	}
	return imgs, nil
}

// staticDebugDockerfile builds the stand-in of distroless/static:debug:
// the static stand-in's files with busybox and a link per applet in
// /busybox, its shell the entrypoint, as root.
const staticDebugDockerfile = `FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 homes/ /home/
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/busybox \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
ENTRYPOINT ["/busybox/sh"]
`

// healthProbeDockerfile builds the stand-in of grpc-health-probe's image.
const healthProbeDockerfile = `FROM scratch
COPY grpc_health_probe /ko-app/grpc-health-probe
ENTRYPOINT ["/ko-app/grpc-health-probe"]
`

// pushOLMBases builds and pushes the stand-ins of distroless/static:debug
// and of grpc-health-probe's image.
func (e *Env) pushOLMBases(ctx context.Context, s OLMSources) error {
	dir, err := os.MkdirTemp(e.opts.WorkDir, "olm-bases-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	debug := filepath.Join(dir, "debug")
	if err := staticContext(debug); err != nil {
		return err
	}
	if err := e.busyboxDir(filepath.Join(debug, "rootfs", "busybox"), "/busybox/busybox"); err != nil {
		return err
	}
	// OLM's Dockerfile links /bin/cp to busybox's.
	if err := mkdir(filepath.Join(debug, "rootfs", "bin"), 0o755); err != nil {
		return err
	}
	probe := filepath.Join(dir, "probe")
	if err := mkdir(probe, 0o755); err != nil {
		return err
	}
	if err := copyFile(s.GRPCHealthProbe, filepath.Join(probe, "grpc_health_probe"), 0o755); err != nil {
		return err
	}
	for _, c := range []string{debug, probe} {
		if err := dateEpoch(c); err != nil {
			return err
		}
	}
	epoch := map[string]string{"SOURCE_DATE_EPOCH": "0"}
	if _, err := e.Build(ctx, Build{Context: debug, DockerfileText: staticDebugDockerfile, Ref: e.Ref(StaticRepo, StaticDebugTag),
		BuildArgs: epoch}); err != nil {
		return err
	}
	_, err = e.Build(ctx, Build{Context: probe, DockerfileText: healthProbeDockerfile,
		Ref: e.Ref(HealthProbeRepo, s.healthProbeVersion()), BuildArgs: epoch})
	return err
}

// busyboxDir puts busybox into dir with a link per applet to target (its
// path in the image, or "busybox" beside the links).
func (e *Env) busyboxDir(dir, target string) error {
	if err := mkdir(dir, 0o755); err != nil {
		return err
	}
	if err := copyFile(e.opts.Busybox, filepath.Join(dir, "busybox"), 0o755); err != nil {
		return err
	}
	applets, err := busyboxApplets(e.opts.Busybox)
	if err != nil {
		return err
	}
	for _, a := range applets {
		if err := os.Symlink(target, filepath.Join(dir, a)); err != nil {
			return err
		}
	}
	return nil
}

// busyboxApplets lists busybox's applets but itself.
func busyboxApplets(busybox string) ([]string, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --list: %w", busybox, err)
	}
	var applets []string
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" {
			applets = append(applets, a)
		}
	}
	return applets, nil
}
