package imagebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/echo-operator/echo-operator/test/harness/realnode"
)

// BuildNodeImages builds the images a real node runs besides the
// workloads' (realnode.NodeImages) from their Dockerfile in the repository
// at root, each into a docker-archive, and returns the archives by
// reference, for realnode.Options.ImageArchives. The build context holds
// each image's files under a directory named after its stage.
func (e *Env) BuildNodeImages(ctx context.Context, root string, images []realnode.NodeImage) (map[string]string, error) {
	dir := filepath.Join(e.opts.WorkDir, "node-images")
	buildContext := filepath.Join(dir, "context")
	if err := os.RemoveAll(buildContext); err != nil {
		return nil, err
	}
	for _, im := range images {
		for file, src := range im.Files {
			if err := linkOrCopy(src, filepath.Join(buildContext, im.Target, file)); err != nil {
				return nil, fmt.Errorf("the build context of %s: %w", im.Ref, err)
			}
		}
	}
	archives := map[string]string{}
	for _, im := range images {
		archive := filepath.Join(dir, im.Target+".tar")
		if _, err := e.Build(ctx, Build{Context: buildContext, Dockerfile: filepath.Join(root, realnode.NodeImageDockerfile),
			Target: im.Target, Ref: im.Ref, Archive: archive}); err != nil {
			return nil, err
		}
		archives[im.Ref] = archive
	}
	return archives, nil
}

// linkOrCopy puts the file src at dst, a hard link when both are on one
// file system.
func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	linkErr := os.Link(src, dst)
	if linkErr == nil {
		return nil
	}
	info, err := os.Stat(src)
	if err != nil {
		return errors.Join(linkErr, err)
	}
	return copyFile(src, dst, info.Mode().Perm())
}
