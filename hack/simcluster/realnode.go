package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/localcluster"
	"github.com/echo-operator/echo-operator/test/harness/realnode"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
	"github.com/echo-operator/echo-operator/test/harness/simcluster"
)

// imagesTag tags the images `make run` builds.
const imagesTag = "dev"

// realNodeCluster is a local cluster with a real node, and the image
// builder whose registry the node pulls from.
type realNodeCluster struct {
	*localcluster.Cluster
	builder *imagebuild.Env
}

// startRealNode builds the project's images with BuildKit into a registry
// on loopback, writes their references to imagesEnv, and starts a control
// plane with a real node that pulls from that registry.
func startRealNode(ctx context.Context, opts simcluster.Options, imagesEnv string) (_ *realNodeCluster, err error) {
	if why := realnode.Unavailable(); why != "" {
		return nil, errors.New(why)
	}
	nodeBins, err := realnode.LocateBinaries()
	if err != nil {
		return nil, err
	}
	imageBins, err := imagebuild.LocateBinaries()
	if err != nil {
		return nil, err
	}
	root, err := reporoot.Find()
	if err != nil {
		return nil, err
	}
	// The real node is the cluster's only node, and local-path-provisioner
	// its storage.
	opts.Nodes, opts.DefaultStorageClass, opts.HeldJobPodNamespaces = 0, false, nil
	c := &realNodeCluster{}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	fmt.Println("simcluster: building the operator and echo server images from the Dockerfile (minutes the first time)")
	if c.builder, err = imagebuild.Start(ctx, imagebuild.Options{Binaries: imageBins, WorkDir: filepath.Join(opts.WorkDir, "images")}); err != nil {
		return nil, fmt.Errorf("starting the image builder: %w", err)
	}
	images, err := c.builder.BuildProject(ctx, root, "0.1.0", imagesTag)
	if err != nil {
		return nil, fmt.Errorf("building the images: %w (logs in %s)", err, c.builder.LogDir())
	}
	if err := writeImagesEnv(imagesEnv, images); err != nil {
		return nil, err
	}
	c.Cluster, err = localcluster.Start(ctx, localcluster.Options{
		Node: realnode.Options{Binaries: nodeBins, Root: filepath.Join(opts.WorkDir, "node"),
			HTTPRegistries: []string{c.builder.Registry.Host}, ClusterServices: true},
		Cluster: opts,
		Builder: c.builder,
	})
	return c, err
}

// Stop stops the cluster, then the image builder.
func (c *realNodeCluster) Stop() error {
	var errs []error
	if c.Cluster != nil {
		errs = append(errs, c.Cluster.Stop())
	}
	if c.builder != nil {
		errs = append(errs, c.builder.Stop())
	}
	return errors.Join(errs...)
}

// writeImagesEnv writes the images' references as shell assignments.
func writeImagesEnv(path string, images []imagebuild.ProjectImage) error {
	if path == "" {
		return nil
	}
	var env string
	for _, img := range images {
		switch img.Repo {
		case imagebuild.OperatorRepo:
			env += "OPERATOR_IMAGE=" + img.Ref + "\n"
		case imagebuild.EchoServerRepo:
			env += "ECHO_IMAGE=" + img.Ref + "\n"
		}
	}
	return os.WriteFile(path, []byte(env), 0o644)
}
