package imagebuild

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The stand-ins of the Dockerfile's base images, as the mirrors of
// docker.io and gcr.io in the local registry name them.
const (
	// GoBuilderRepo and GoBuilderTag stand in for docker.io/library/golang:1.26.
	GoBuilderRepo, GoBuilderTag = "library/golang", "1.26"
	// StaticRepo and StaticTag stand in for gcr.io/distroless/static:nonroot.
	StaticRepo, StaticTag = "distroless/static", "nonroot"
)

// BasePlatforms are the platforms of the distroless stand-in: the
// platforms the project's images can be built for (Build.Platforms). Its
// files are the same on each (no binaries), so no emulation is needed.
// The Go builder's stand-in is this machine's platform alone: the
// Dockerfile runs it on the build platform, which cross-compiles.
var BasePlatforms = []string{"linux/amd64", "linux/arm64"}

// caBundle is the host's CA certificates, Debian's path, which is also
// where distroless keeps them.
const caBundle = "/etc/ssl/certs/ca-certificates.crt"

// goBuilderDockerfile builds the Go builder's stand-in: the environment of
// the golang image (GOPATH, PATH, GOTOOLCHAIN=local) over a static busybox
// and this machine's Go toolchain. Modules come from the module proxy on
// loopback; GOSUMDB is off (nothing outside answers) and go.sum still
// verifies every module.
const goBuilderDockerfile = `FROM scratch
COPY rootfs/ /
COPY --from=goroot / /usr/local/go
ENV GOLANG_VERSION={{version}} \
    GOTOOLCHAIN=local \
    GOPATH=/go \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GOPROXY=http://{{proxy}} \
    GOSUMDB=off
WORKDIR /go
`

// staticDockerfile builds the stand-in of distroless/static:nonroot: its
// users and groups, /home/nonroot, /tmp, CA certificates and configuration.
const staticDockerfile = `FROM scratch
COPY rootfs/ /
COPY --chown=65532:65532 homes/ /home/
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
USER 65532
WORKDIR /home/nonroot
`

const (
	builderPasswd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	builderGroup  = "root:x:0:\nnobody:x:65534:\n"
	staticPasswd  = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	staticGroup = "root:x:0:\nnobody:x:65534:\ntty:x:5:\nstaff:x:50:\nnonroot:x:65532:\n"
)

// The contexts of the stand-ins: rootfs/ is copied as it is; homes/ holds
// the home directories of users other than root, which COPY --chown gives
// them.

// pushBases builds the two stand-ins and pushes them, the distroless one
// as an index of BasePlatforms. Their files are
// dated the epoch and the images SOURCE_DATE_EPOCH=0, so the same inputs
// give the same digests.
func (e *Env) pushBases(ctx context.Context) error {
	dir, err := os.MkdirTemp(e.opts.WorkDir, "bases-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	goroot, goVersion, err := goToolchain(ctx)
	if err != nil {
		return err
	}
	builder := filepath.Join(dir, "golang")
	if err := e.builderContext(builder, goVersion); err != nil {
		return err
	}
	static := filepath.Join(dir, "static")
	if err := staticContext(static); err != nil {
		return err
	}
	epoch := map[string]string{"SOURCE_DATE_EPOCH": "0"}
	if _, err := e.Build(ctx, Build{Context: builder, Ref: e.Ref(GoBuilderRepo, GoBuilderTag), BuildArgs: epoch,
		Contexts: map[string]string{"goroot": goroot}}); err != nil {
		return err
	}
	_, err = e.Build(ctx, Build{Context: static, Ref: e.Ref(StaticRepo, StaticTag), BuildArgs: epoch, Platforms: BasePlatforms})
	return err
}

// goToolchain is this machine's GOROOT and Go version (1.26.8).
func goToolchain(ctx context.Context) (goroot, version string, err error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOROOT", "GOVERSION").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOROOT GOVERSION: %w", err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 {
		return "", "", fmt.Errorf("go env GOROOT GOVERSION: %q", out)
	}
	return lines[0], strings.TrimPrefix(lines[1], "go"), nil
}

// builderContext lays out the Go builder's context in dir: busybox and a
// link per applet in /bin, CA certificates, root's passwd entry, /tmp and
// the GOPATH, writable by all as in the golang image.
func (e *Env) builderContext(dir, goVersion string) error {
	rootfs := filepath.Join(dir, "rootfs")
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{"rootfs/bin", 0o755}, {"rootfs/etc/ssl/certs", 0o755}, {"rootfs/root", 0o700},
		{"rootfs/tmp", sticky}, {"rootfs/go", sticky}, {"rootfs/go/bin", sticky}, {"rootfs/go/src", sticky}} {
		if err := mkdir(filepath.Join(dir, d.path), d.mode); err != nil {
			return err
		}
	}
	if err := e.busyboxDir(filepath.Join(rootfs, "bin"), "busybox"); err != nil {
		return err
	}
	if err := writeFiles(rootfs, map[string]string{"etc/passwd": builderPasswd, "etc/group": builderGroup}); err != nil {
		return err
	}
	if err := copyFile(caBundle, filepath.Join(rootfs, caBundle), 0o644); err != nil {
		return fmt.Errorf("the CA certificates (Debian's ca-certificates): %w", err)
	}
	dockerfile := strings.NewReplacer("{{version}}", goVersion, "{{proxy}}", ModuleProxyAddr).Replace(goBuilderDockerfile)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		return err
	}
	return dateEpoch(dir)
}

// staticContext lays out the distroless stand-in's context in dir.
func staticContext(dir string) error {
	rootfs := filepath.Join(dir, "rootfs")
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{"rootfs/etc/ssl/certs", 0o755}, {"rootfs/root", 0o700}, {"rootfs/home", 0o755},
		{"rootfs/tmp", sticky}, {"homes/nonroot", 0o700}} {
		if err := mkdir(filepath.Join(dir, d.path), d.mode); err != nil {
			return err
		}
	}
	if err := writeFiles(rootfs, map[string]string{"etc/passwd": staticPasswd, "etc/group": staticGroup}); err != nil {
		return err
	}
	if err := copyFile(caBundle, filepath.Join(rootfs, caBundle), 0o644); err != nil {
		return fmt.Errorf("the CA certificates (Debian's ca-certificates): %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(staticDockerfile), 0o644); err != nil {
		return err
	}
	return dateEpoch(dir)
}

// sticky is the mode of /tmp: 1777. Go spells the sticky bit
// fs.ModeSticky; 0o1000 would be dropped.
const sticky = fs.ModeSticky | 0o777

// mkdir makes a directory with exactly mode (the umask would drop write
// bits).
func mkdir(dir string, mode fs.FileMode) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.Chmod(dir, mode)
}

func writeFiles(root string, files map[string]string) error {
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// dateEpoch dates every file and directory under dir, links included,
// 1970-01-01: the layers then depend on the contents only.
func dateEpoch(dir string) error {
	epoch := time.Unix(0, 0)
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return lchtimes(p, epoch)
		}
		return os.Chtimes(p, epoch, epoch)
	})
}
