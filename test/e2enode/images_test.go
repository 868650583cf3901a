package e2enode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
)

// The test's own images, built by BuildKit on the distroless stand-in
// into the builder's registry, from which the node pulls them.
var (
	// minioImage is the S3 server of the backup tests, from $MINIO.
	minioImage string
	// httpgetImage gets a URL with a bearer token, as curl -k would.
	httpgetImage string
)

// binaryDockerfile is the Dockerfile of an image of one static binary,
// run as the distroless base's nonroot user.
const binaryDockerfile = `FROM gcr.io/distroless/static:nonroot
COPY {{name}} /{{name}}
ENTRYPOINT ["/{{name}}"]
`

// buildImages builds the operator and the echo server from the Dockerfile
// with BuildKit into the builder's registry, and the test's own images.
func buildImages(ctx context.Context) error {
	bins, err := imagebuild.LocateBinaries()
	if err != nil {
		return err
	}
	if builder, err = imagebuild.Start(ctx, imagebuild.Options{Binaries: bins, WorkDir: filepath.Join(workDir, "images")}); err != nil {
		return fmt.Errorf("starting the image builder: %w", err)
	}
	built, err := builder.BuildProject(ctx, repoRoot, "0.1.0", "e2enode")
	if err != nil {
		return fmt.Errorf("building the Dockerfile: %w (logs in %s)", err, builder.LogDir())
	}
	for _, img := range built {
		switch img.Repo {
		case imagebuild.OperatorRepo:
			operatorImage = img.Ref
		case imagebuild.EchoServerRepo:
			echoServerImage = img.Ref
		}
	}
	httpget := filepath.Join(workDir, "httpget")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", httpget, "./test/e2enode/httpget")
	build.Dir, build.Env = repoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building httpget: %w\n%s", err, out)
	}
	for _, img := range []struct {
		ref          *string
		name, binary string
	}{
		{&minioImage, "minio", os.Getenv("MINIO")},
		{&httpgetImage, "httpget", httpget},
	} {
		dir := filepath.Join(workDir, "image-"+img.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := exec.CommandContext(ctx, "cp", img.binary, filepath.Join(dir, img.name)).Run(); err != nil {
			return fmt.Errorf("the %s image (from %s): %w", img.name, img.binary, err)
		}
		*img.ref = builder.Ref("e2enode/"+img.name, "test")
		_, err := builder.Build(ctx, imagebuild.Build{Context: dir, Ref: *img.ref,
			DockerfileText: strings.ReplaceAll(binaryDockerfile, "{{name}}", img.name)})
		if err != nil {
			return fmt.Errorf("the %s image: %w", img.name, err)
		}
	}
	return nil
}
