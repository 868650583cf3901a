package imagebuild_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// testVersion is the VERSION the project's images are built with, and
// testTag their tag.
const (
	testVersion = "0.0.0-imagebuild-test"
	testTag     = "test"
)

// The Env and the project's images, shared by the tests of the package:
// building them once is what takes time.
var shared struct {
	once   sync.Once
	work   string // the Env's WorkDir: the registry's storage, the logs
	env    *imagebuild.Env
	images map[string]imagebuild.ProjectImage // by target
	err    error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.env != nil {
		if err := shared.env.Stop(); err != nil {
			_, _ = os.Stderr.WriteString("stopping the image builder: " + err.Error() + "\n")
			code = 1
		}
	}
	// The logs stay when a test failed.
	if shared.work != "" && code == 0 {
		_ = os.RemoveAll(shared.work)
	}
	os.Exit(code)
}

// needBuilder skips where no image can be built (or fails under CI when
// the binaries are missing), and returns the shared Env with the project's
// images built and pushed.
func needBuilder(t *testing.T) (*imagebuild.Env, map[string]imagebuild.ProjectImage) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds images: not in -short mode")
	}
	if why := imagebuild.Unavailable(); why != "" {
		t.Skip(why)
	}
	bins, err := imagebuild.LocateBinaries()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	root := reporoot.Must(t)
	shared.once.Do(func() {
		work, err := os.MkdirTemp("", "echo-imagebuild-test-")
		if err != nil {
			shared.err = err
			return
		}
		shared.work = work
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		start := time.Now()
		if shared.env, shared.err = imagebuild.Start(ctx, imagebuild.Options{Binaries: bins, WorkDir: work}); shared.err != nil {
			return
		}
		images, err := shared.env.BuildProject(ctx, root, testVersion, testTag)
		if shared.err = err; err != nil {
			return
		}
		shared.images = map[string]imagebuild.ProjectImage{}
		for _, img := range images {
			shared.images[img.Target] = img
		}
		t.Logf("the project's images built in %s", time.Since(start).Round(time.Second))
	})
	if shared.err != nil {
		t.Fatalf("building the project's images: %v", shared.err)
	}
	return shared.env, shared.images
}

// TestProjectImagesFollowTheDockerfile reads the images built from the
// Dockerfile back from the registry: their configuration is what the
// Dockerfile says, their files where the cluster runs them, on the base
// that distroless/static:nonroot stands for.
func TestProjectImagesFollowTheDockerfile(t *testing.T) {
	env, images := needBuilder(t)
	ctx := context.Background()
	for _, tc := range []struct {
		target, title, entrypoint string
		files                     []string
		ports                     []string
	}{
		{target: "operator", title: "echo-operator", entrypoint: "/manager",
			files: []string{"/manager", "/watches.yaml", "/helm-charts/echo/Chart.yaml", "/helm-charts/echo/values.yaml"}},
		{target: "echo-server", title: "echo-server", entrypoint: "/echo-server",
			files: []string{"/echo-server"}, ports: []string{"8080/tcp"}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			built := images[tc.target]
			img, err := imagebuild.ReadImage(ctx, env.Registry.Host, built.Repo, built.Tag)
			if err != nil {
				t.Fatal(err)
			}
			if img.Digest != built.Digest {
				t.Errorf("the registry serves %s, the build pushed %s", img.Digest, built.Digest)
			}
			c := img.Config.Config
			if img.Config.OS != "linux" || c.User != "65532:65532" || c.WorkingDir != "/" ||
				!slices.Equal(c.Entrypoint, []string{tc.entrypoint}) || len(c.Cmd) != 0 {
				t.Errorf("os %s, user %q, workdir %q, entrypoint %q, cmd %q; want linux, 65532:65532, /, [%s], none",
					img.Config.OS, c.User, c.WorkingDir, c.Entrypoint, c.Cmd, tc.entrypoint)
			}
			for k, want := range map[string]string{
				"org.opencontainers.image.title":   tc.title,
				"org.opencontainers.image.version": testVersion,
				"org.opencontainers.image.source":  "https://github.com/echo-operator/echo-operator",
			} {
				if got := c.Labels[k]; got != want {
					t.Errorf("label %s = %q, want %q", k, got, want)
				}
			}
			var ports []string
			for p := range c.ExposedPorts {
				ports = append(ports, p)
			}
			if !slices.Equal(ports, tc.ports) {
				t.Errorf("exposed ports %v, want %v", ports, tc.ports)
			}
			if !slices.Contains(c.Env, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt") {
				t.Errorf("env %v lacks the base's SSL_CERT_FILE", c.Env)
			}
			for _, f := range tc.files {
				file, ok := img.Files[f]
				switch {
				case !ok:
					t.Errorf("%s is not in the image", f)
				case !file.Mode.IsRegular() || file.Mode.Perm()&0o004 == 0:
					t.Errorf("%s has mode %s: want a file all can read", f, file.Mode)
				}
			}
			if m := img.Files[tc.entrypoint].Mode; m.Perm()&0o001 == 0 {
				t.Errorf("%s has mode %s: want executable by all", tc.entrypoint, m)
			}
			checkStaticBase(t, img)
		})
	}
}

// checkStaticBase checks what distroless/static:nonroot gives an image:
// the nonroot user, its home, /tmp and CA certificates, and no shell.
func checkStaticBase(t *testing.T, img *imagebuild.Image) {
	t.Helper()
	for _, f := range []string{"/etc/passwd", "/etc/group", "/etc/ssl/certs/ca-certificates.crt"} {
		if _, ok := img.Files[f]; !ok {
			t.Errorf("%s is not in the image", f)
		}
	}
	if tmp := img.Files["/tmp"]; !tmp.Mode.IsDir() || tmp.Mode&fs.ModeSticky == 0 || tmp.Mode.Perm() != 0o777 {
		t.Errorf("/tmp has mode %s, want drwxrwxrwt", tmp.Mode)
	}
	if home := img.Files["/home/nonroot"]; !home.Mode.IsDir() || home.UID != 65532 || home.GID != 65532 {
		t.Errorf("/home/nonroot: mode %s, owner %d:%d; want a directory of 65532:65532", home.Mode, home.UID, home.GID)
	}
	if _, ok := img.Files["/bin/sh"]; ok {
		t.Error("the image has a shell")
	}
}

// TestBuildsASmallImageFromADirectory builds a Dockerfile of a context of
// its own, FROM the distroless stand-in, as the cluster's other images are
// built; the context's .dockerignore applies. A second image is built from
// a Dockerfile given as text, with a binary from a named context.
func TestBuildsASmallImageFromADirectory(t *testing.T) {
	env, _ := needBuilder(t)
	dir := t.TempDir()
	files := map[string]string{
		"Dockerfile":    "FROM gcr.io/distroless/static:nonroot\nCOPY --chmod=0755 hello /usr/bin/hello\nCOPY . /context/\nENTRYPOINT [\"/usr/bin/hello\"]\n",
		"hello":         "not really a program\n",
		"secret":        "left out\n",
		".dockerignore": "secret\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	digest, err := env.Build(ctx, imagebuild.Build{Context: dir, Ref: env.Ref("small", "test")})
	if err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.ReadImage(ctx, env.Registry.Host, "small", "test")
	if err != nil {
		t.Fatal(err)
	}
	if img.Digest != digest {
		t.Errorf("the registry serves %s, the build pushed %s", img.Digest, digest)
	}
	if hello := img.Files["/usr/bin/hello"]; hello.Mode.Perm() != 0o755 || hello.Size != int64(len(files["hello"])) {
		t.Errorf("/usr/bin/hello: %+v", hello)
	}
	if _, ok := img.Files["/context/hello"]; !ok {
		t.Error("COPY . lacks /context/hello")
	}
	if _, ok := img.Files["/context/secret"]; ok {
		t.Error("COPY . copied /context/secret, which .dockerignore excludes")
	}
	if c := img.Config.Config; c.User != "65532" || c.WorkingDir != "/home/nonroot" || !slices.Equal(c.Entrypoint, []string{"/usr/bin/hello"}) {
		t.Errorf("user %q, workdir %q, entrypoint %q: want the base's 65532 and /home/nonroot, and /usr/bin/hello", c.User, c.WorkingDir, c.Entrypoint)
	}
	checkStaticBase(t, img)

	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "tool"), []byte("a tool\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = env.Build(ctx, imagebuild.Build{Context: dir, Ref: env.Ref("tool", "test"), Contexts: map[string]string{"bin": bin},
		DockerfileText: "FROM gcr.io/distroless/static:nonroot\nCOPY --from=bin tool /usr/bin/tool\nENTRYPOINT [\"/usr/bin/tool\"]\n"})
	if err != nil {
		t.Fatal(err)
	}
	tool, err := imagebuild.ReadImage(ctx, env.Registry.Host, "tool", "test")
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := tool.Files["/usr/bin/tool"]; !ok || f.Mode.Perm() != 0o755 {
		t.Errorf("/usr/bin/tool: %+v, %v", f, ok)
	}
	if _, ok := tool.Files["/usr/bin/hello"]; ok {
		t.Error("the image from the text Dockerfile has the other image's /usr/bin/hello")
	}
}

// TestProjectIndexHoldsEveryPlatform builds the echo server's image for
// amd64 and arm64 as `make docker-buildx` builds every image of the
// project, an OCI index, and reads every manifest back (CheckIndex): the
// platform the index names is the configuration's, and the binary is an
// ELF executable of that machine (cross-compiled on the build platform,
// not emulated). The operator's image goes through the same build and the
// same check in every `make docker-buildx`, which refuses an index that
// fails it; here its arm64 compile would cost minutes of make test.
func TestProjectIndexHoldsEveryPlatform(t *testing.T) {
	env, _ := needBuilder(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root := reporoot.Must(t)
	start := time.Now()
	tag := testTag + "-multiarch"
	digest, err := env.Build(ctx, imagebuild.Build{Context: root, Dockerfile: filepath.Join(root, "Dockerfile"), Target: "echo-server",
		BuildArgs: map[string]string{"VERSION": testVersion}, Ref: env.Ref(imagebuild.EchoServerRepo, tag), Platforms: imagebuild.BasePlatforms})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the echo server's image built for %v in %s", imagebuild.BasePlatforms, time.Since(start).Round(time.Second))
	idx, err := imagebuild.CheckIndex(ctx, env.Registry.Host, imagebuild.EchoServerRepo, tag,
		imagebuild.ProjectBinaries["echo-server"], imagebuild.BasePlatforms)
	if err != nil {
		t.Fatal(err)
	}
	if idx.Digest != digest {
		t.Errorf("the registry serves the index %s, the build pushed %s", idx.Digest, digest)
	}
	// The check fails where it should: a platform missing, a binary absent.
	if _, err := imagebuild.CheckIndex(ctx, env.Registry.Host, imagebuild.EchoServerRepo, tag, "/echo-server", []string{"linux/amd64"}); err == nil {
		t.Error("CheckIndex accepts an index of more platforms than asked for")
	}
	if _, err := imagebuild.CheckIndex(ctx, env.Registry.Host, imagebuild.EchoServerRepo, tag, "/manager", imagebuild.BasePlatforms); err == nil {
		t.Error("CheckIndex accepts an index without the binary")
	}
}
