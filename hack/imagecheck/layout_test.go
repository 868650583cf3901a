package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeManager is a small static program that stands in for the manager in
// the tests, so that they need not build it: like the manager, its usage
// lists -watches-file.
var fakeManager string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "imagecheck-test-")
		if err != nil {
			_, _ = fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() { _ = os.RemoveAll(dir) }()
		src := filepath.Join(dir, "main.go")
		prog := "package main\n\nimport \"flag\"\n\nfunc main() {\n\tflag.String(\"watches-file\", \"watches.yaml\", \"\")\n\tflag.Parse()\n}\n"
		if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
			_, _ = fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fakeManager = filepath.Join(dir, "manager")
		cmd := exec.Command("go", "build", "-o", fakeManager, src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			_, _ = fmt.Fprintf(os.Stderr, "building the fake manager: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}())
}

// recorder is a binaryBuilder that copies a prepared binary and records the
// builds it was asked for.
type recorder struct {
	binary string
	builds []goBuild
}

func (r *recorder) build(b goBuild, out string) error {
	r.builds = append(r.builds, b)
	data, err := os.ReadFile(r.binary)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o755)
}

// assemble builds the layout of a Dockerfile's operator stage with the
// recorder, for platform.
func assemble(t *testing.T, dockerfile string, rec *recorder, platform ocispecs.Platform) v1.Image {
	t.Helper()
	df, err := parseDockerfile("Dockerfile", []byte(dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	target, err := df.stageIndex("operator")
	if err != nil {
		t.Fatal(err)
	}
	img, err := assembleImage(df, repoContext(t), target, layoutOptions{
		root: repoRoot, platform: platform, args: buildArgs{"VERSION": "9.9.9"},
		epoch: time.Unix(0, 0).UTC(), build: rec.build,
	}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// verify writes img as a layout and verifies it; it returns the output and
// the error of the verification.
func verify(t *testing.T, img v1.Image, platform ocispecs.Platform) (string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "oci")
	if _, err := writeLayout(dir, img, "registry.example.test/echo-operator:v9.9.9"); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	labels := map[string]string{"org.opencontainers.image.title": "echo-operator", "org.opencontainers.image.version": "9.9.9"}
	err := verifyLayout(dir, repoContext(t), testSpec(t), verifyOptions{platform: &platform, labels: labels, smoke: true}, &out)
	return out.String(), err
}

func TestLayoutOfRepositoryDockerfile(t *testing.T) {
	rec := &recorder{binary: fakeManager}
	img := assemble(t, repoDockerfile(t), rec, amd64)
	out, err := verify(t, img, amd64)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Log(out)
	if !strings.Contains(out, `ran ["/manager" "-help"]`) {
		t.Errorf("the manager was not run: %s", out)
	}
	checkManagerBuild(t, rec.builds)
	back := readBack(t, img)
	checkConfig(t, back)
	checkFiles(t, back)
}

// checkManagerBuild checks that the manager is built as the Dockerfile
// builds it, for the platform.
func checkManagerBuild(t *testing.T, builds []goBuild) {
	t.Helper()
	if len(builds) != 1 {
		t.Fatalf("want one build, got %+v", builds)
	}
	b := builds[0]
	if b.pkg != "./cmd/manager" || b.env["CGO_ENABLED"] != "0" || b.env["GOOS"] != "linux" || b.env["GOARCH"] != "amd64" {
		t.Errorf("build %+v", b)
	}
	if !slices.Contains(b.flags, "-trimpath") || !slices.Contains(b.flags, "-ldflags=-s -w") {
		t.Errorf("build flags %q", b.flags)
	}
}

// readBack writes img as a layout and reads its image back.
func readBack(t *testing.T, img v1.Image) v1.Image {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "oci")
	if _, err := writeLayout(dir, img, "registry.example.test/echo-operator:v9.9.9"); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	ii, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	back, err := images(ii)
	if err != nil || len(back) != 1 {
		t.Fatalf("images: %v %v", back, err)
	}
	return back[0]
}

func checkConfig(t *testing.T, img v1.Image) {
	t.Helper()
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Config
	if c.User != "65532:65532" || !slices.Equal(c.Entrypoint, []string{"/manager"}) || c.WorkingDir != "/" ||
		cfg.OS != "linux" || cfg.Architecture != "amd64" {
		t.Errorf("config: user %q, entrypoint %q, workdir %q, platform %s/%s", c.User, c.Entrypoint, c.WorkingDir, cfg.OS, cfg.Architecture)
	}
	if c.Labels["org.opencontainers.image.version"] != "9.9.9" || c.Labels["org.opencontainers.image.title"] != "echo-operator" {
		t.Errorf("labels %v", c.Labels)
	}
}

// checkFiles checks the image's files, with their modes and owners.
func checkFiles(t *testing.T, img v1.Image) {
	t.Helper()
	want := map[string]int64{
		"manager":                                    0o755,
		"watches.yaml":                               0o644,
		"helm-charts":                                0o755,
		"helm-charts/echo/Chart.yaml":                0o644,
		"helm-charts/echo/values.yaml":               0o644,
		"helm-charts/echo/templates":                 0o755,
		"helm-charts/echo/templates/deployment.yaml": 0o644,
	}
	got := map[string]*tar.Header{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got[strings.TrimSuffix(h.Name, "/")] = h
	}
	for name, mode := range want {
		h, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s: not in the image", name)
		case h.Mode != mode || h.Uid != 0 || h.Gid != 0:
			t.Errorf("%s: mode %o, owner %d:%d; want %o, 0:0", name, h.Mode, h.Uid, h.Gid, mode)
		}
	}
}

func TestLayoutIsReproducible(t *testing.T) {
	digest := func() v1.Hash {
		d, err := assemble(t, repoDockerfile(t), &recorder{binary: fakeManager}, amd64).Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if a, b := digest(), digest(); a != b {
		t.Fatalf("two assemblies differ: %s, %s", a, b)
	}
}

func TestVerifyCatches(t *testing.T) {
	const copyManager = "COPY --from=builder /workspace/manager /manager"
	withConfig := func(edit func(*v1.Config)) func(*testing.T, v1.Image) v1.Image {
		return func(t *testing.T, img v1.Image) v1.Image {
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			c := *cfg.Config.DeepCopy()
			edit(&c)
			img, err = mutate.Config(img, c)
			if err != nil {
				t.Fatal(err)
			}
			return img
		}
	}
	tests := []struct {
		name     string
		edit     func(t *testing.T, df string) string
		image    func(t *testing.T, img v1.Image) v1.Image
		binary   string
		platform ocispecs.Platform
		want     string
	}{{
		name:  "root user",
		image: withConfig(func(c *v1.Config) { c.User = "0:0" }),
		want:  `runs as user "0:0"`,
	}, {
		name:  "named user",
		image: withConfig(func(c *v1.Config) { c.User = "nonroot" }),
		want:  `runs as user "nonroot"`,
	}, {
		name:  "entrypoint through a shell",
		image: withConfig(func(c *v1.Config) { c.Entrypoint = []string{"/bin/sh", "-c", "/manager"} }),
		want:  "the entrypoint is",
	}, {
		name:  "working directory without watches.yaml",
		image: withConfig(func(c *v1.Config) { c.WorkingDir = "/helm-charts" }),
		want:  "/helm-charts/watches.yaml: not in the image",
	}, {
		name:  "label not the Dockerfile's",
		image: withConfig(func(c *v1.Config) { c.Labels["org.opencontainers.image.version"] = "0.0.1" }),
		want:  `label org.opencontainers.image.version is "0.0.1": the Dockerfile sets "9.9.9"`,
	}, {
		name: "watches.yaml unreadable",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY watches.yaml /watches.yaml", "COPY --chmod=0600 watches.yaml /watches.yaml")
		},
		want: "user 65532 cannot read it",
	}, {
		name: "no charts",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY helm-charts/ /helm-charts/\n", "")
		},
		want: "chart directory /helm-charts/echo: not in the image",
	}, {
		name: "manager writable by its user",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, copyManager, "COPY --chown=65532:65532 --from=builder /workspace/manager /manager")
		},
		want: "could overwrite it",
	}, {
		name: "manager not executable",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, copyManager, "COPY --chmod=0644 --from=builder /workspace/manager /manager")
		},
		want: "cannot run it",
	}, {
		name:   "manager not an executable",
		binary: filepath.Join(repoRoot, "watches.yaml"),
		want:   "not an ELF executable",
	}, {
		name:   "manager dynamically linked",
		binary: dynamicBinary(),
		want:   "dynamically linked",
	}, {
		name:     "manager for another architecture",
		platform: ocispecs.Platform{OS: "linux", Architecture: "arm64"},
		want:     "built for EM_X86_64, but the image is for arm64",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.binary == "-" {
				t.Skip("no dynamically linked binary on this machine")
			}
			df := repoDockerfile(t)
			if tt.edit != nil {
				df = tt.edit(t, df)
			}
			platform := amd64
			if tt.platform.Architecture != "" {
				platform = tt.platform
			}
			rec := &recorder{binary: cmpOr(tt.binary, fakeManager)}
			img := assemble(t, df, rec, platform)
			if tt.image != nil {
				img = tt.image(t, img)
			}
			out, err := verify(t, img, platform)
			var failed *failedError
			if !errors.As(err, &failed) {
				t.Fatalf("want the verification to fail, got %v\n%s", err, out)
			}
			if !strings.Contains(out, tt.want) {
				t.Fatalf("want %q in the output:\n%s", tt.want, out)
			}
			t.Log(out)
		})
	}
}

// dynamicBinary returns a dynamically linked executable of this machine,
// or "-" when it has none.
func dynamicBinary() string {
	for _, p := range []string{"/bin/true", "/usr/bin/true", "/bin/ls"} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		err = staticELF(f, "amd64")
		_ = f.Close()
		if err != nil && strings.Contains(err.Error(), "dynamically") {
			return p
		}
	}
	return "-"
}

func TestLayoutRefusesToReplaceOtherDirectories(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := assemble(t, repoDockerfile(t), &recorder{binary: fakeManager}, amd64)
	if _, err := writeLayout(dir, img, ""); err == nil {
		t.Fatal("want an error: the directory is no OCI layout")
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Fatalf("the directory was touched: %v", err)
	}
}

func TestLayoutRejectsRunInTheImageStage(t *testing.T) {
	df, err := parseDockerfile("Dockerfile", []byte(replace(t, repoDockerfile(t), "USER 65532:65532\nENTRYPOINT [\"/manager\"]", "RUN [\"/manager\", \"-help\"]\nUSER 65532:65532\nENTRYPOINT [\"/manager\"]")))
	if err != nil {
		t.Fatal(err)
	}
	target, _ := df.stageIndex("operator")
	_, err = assembleImage(df, repoContext(t), target, layoutOptions{root: repoRoot, platform: amd64, build: (&recorder{binary: fakeManager}).build}, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "RUN is not supported") {
		t.Fatalf("want RUN rejected, got %v", err)
	}
}

func TestVerifyDoesNotFollowLinksOutOfTheImage(t *testing.T) {
	// /watches.yaml becomes a link to a copy outside the image: the files
	// the manager needs must be in the image.
	outside := filepath.Join(t.TempDir(), "watches.yaml")
	data, err := os.ReadFile(filepath.Join(repoRoot, "watches.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var w layerWriter
	if err := w.header(&tar.Header{Typeflag: tar.TypeSymlink, Name: "/watches.yaml", Linkname: outside, ModTime: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	layer, err := w.layer()
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(assemble(t, repoDockerfile(t), &recorder{binary: fakeManager}, amd64), layer)
	if err != nil {
		t.Fatal(err)
	}
	out, err := verify(t, img, amd64)
	if err == nil || !strings.Contains(out, "/watches.yaml: not a regular file") {
		t.Fatalf("want /watches.yaml rejected, got %v\n%s", err, out)
	}
}
