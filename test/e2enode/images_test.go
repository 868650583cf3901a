package e2enode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
)

// The test's own images, which the node has before its kubelet starts:
// pods run them as pulled (imagePullPolicy IfNotPresent).
const (
	// minioImage is the S3 server of the backup tests, from $MINIO.
	minioImage = "localhost/echo-operator/minio:e2enode"
	// httpgetImage gets a URL with a bearer token, as curl -k would.
	httpgetImage = "localhost/echo-operator/httpget:e2enode"
)

// testImages are the archives of the test's own images.
var testImages []string

// buildImages builds the operator and the echo server from the Dockerfile
// with BuildKit into the builder's registry, and writes the test's own
// images.
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
	for _, img := range []struct{ ref, name, binary string }{
		{minioImage, "minio", os.Getenv("MINIO")},
		{httpgetImage, "httpget", httpget},
	} {
		archive := filepath.Join(workDir, img.name+".tar")
		if err := realnode.WriteImage(archive, img.ref, realnode.ImageConfig{Entrypoint: []string{"/" + img.name}, User: "65532:65532"},
			map[string]string{"/" + img.name: img.binary}); err != nil {
			return fmt.Errorf("the %s image (from %s): %w", img.name, img.binary, err)
		}
		testImages = append(testImages, archive)
	}
	return nil
}
