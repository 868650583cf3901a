package imagebuild

import (
	"context"
	"path"
	"path/filepath"
)

// The repositories of the project's images in the local registry.
const (
	OperatorRepo   = "echo-operator"
	EchoServerRepo = "echo-server"
)

// ProjectImage is an image of the project's Dockerfile, pushed.
type ProjectImage struct {
	// Target is the Dockerfile's stage.
	Target string
	// Repo and Tag locate it in the registry; Ref is Registry.Host/Repo:Tag.
	Repo, Tag, Ref string
	Digest         string
}

// BuildProject builds the project's Dockerfile at root, the echo-server
// stage and the operator one (the last), with the build argument VERSION,
// and pushes them as echo-server:<tag> and echo-operator:<tag>.
func (e *Env) BuildProject(ctx context.Context, root, version, tag string) ([]ProjectImage, error) {
	return e.BuildProjectIn(ctx, root, version, "", tag)
}

// BuildProjectIn is BuildProject with the repositories under org:
// org/echo-server:<tag> and org/echo-operator:<tag>, which the registry
// also serves as the mirror of quay.io/org/... .
func (e *Env) BuildProjectIn(ctx context.Context, root, version, org, tag string) ([]ProjectImage, error) {
	return e.BuildProjectFor(ctx, root, version, org, tag, nil)
}

// BuildProjectFor is BuildProjectIn for platforms (e.g. linux/amd64 and
// linux/arm64; nil means this machine's): with more than one, each image
// is an OCI index of a manifest per platform, and its Digest the index's.
// The Dockerfile's builder stage runs on this machine and cross-compiles
// for each platform; the other stages only copy, so nothing is emulated.
func (e *Env) BuildProjectFor(ctx context.Context, root, version, org, tag string, platforms []string) ([]ProjectImage, error) {
	images := []ProjectImage{
		{Target: "echo-server", Repo: path.Join(org, EchoServerRepo), Tag: tag},
		{Target: "operator", Repo: path.Join(org, OperatorRepo), Tag: tag},
	}
	for i := range images {
		img := &images[i]
		img.Ref = e.Ref(img.Repo, img.Tag)
		digest, err := e.Build(ctx, Build{Context: root, Dockerfile: filepath.Join(root, "Dockerfile"), Target: img.Target,
			BuildArgs: map[string]string{"VERSION": version}, Ref: img.Ref, Platforms: platforms})
		if err != nil {
			return nil, err
		}
		img.Digest = digest
	}
	return images, nil
}
