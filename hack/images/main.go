package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
)

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "the repository: the build context and its Dockerfile")
	flag.StringVar(&o.version, "version", "0.1.0", "the VERSION build argument")
	flag.StringVar(&o.tag, "tag", "", "the images' tag (default v<version>)")
	flag.StringVar(&o.registryDir, "registry-dir", "", "the registry's storage, kept between runs (default $XDG_CACHE_HOME/echo-operator/registry)")
	flag.StringVar(&o.platforms, "platforms", "", "the platforms to build for, comma-separated (e.g. linux/amd64,linux/arm64): each image an OCI index of them (default this machine's, one image)")
	flag.BoolVar(&o.serve, "serve", false, "keep the registry serving the images until interrupted")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

type options struct {
	root, version, tag, registryDir, platforms string
	serve                                      bool
}

func run(o options) error {
	if why := imagebuild.Unavailable(); why != "" {
		return fmt.Errorf("%s", why)
	}
	bins, err := imagebuild.LocateBinaries()
	if err != nil {
		return err
	}
	if o.tag == "" {
		o.tag = "v" + o.version
	}
	if o.root, err = filepath.Abs(o.root); err != nil {
		return err
	}
	if o.registryDir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no cache directory for the registry (give -registry-dir): %w", err)
		}
		o.registryDir = filepath.Join(cache, "echo-operator", "registry")
	}
	work, err := os.MkdirTemp("", "echo-images-")
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	start := time.Now()
	env, err := imagebuild.Start(ctx, imagebuild.Options{Binaries: bins, WorkDir: work, RegistryDir: o.registryDir, Logger: log})
	if err != nil {
		return fmt.Errorf("%w (logs in %s)", err, filepath.Join(work, "logs"))
	}
	defer func() { _ = env.Stop() }()
	var platforms []string
	if o.platforms != "" {
		platforms = strings.Split(o.platforms, ",")
	}
	images, err := env.BuildProjectFor(ctx, o.root, o.version, "", o.tag, platforms)
	if err != nil {
		return err
	}
	for _, img := range images {
		if len(platforms) > 1 {
			if _, err := imagebuild.CheckIndex(ctx, env.Registry.Host, img.Repo, img.Digest, imagebuild.ProjectBinaries[img.Target], platforms); err != nil {
				return fmt.Errorf("the %s image is not what its platforms need: %w", img.Target, err)
			}
		}
		fmt.Printf("%s@%s\n", img.Ref, img.Digest)
	}
	log.Info("images built", "took", time.Since(start).Round(time.Second), "registry", env.Registry.Host, "storage", o.registryDir)
	if o.serve {
		log.Info("serving the images until interrupted", "registry", env.Registry.Host)
		<-ctx.Done()
	}
	if err := env.Stop(); err != nil {
		return err
	}
	return os.RemoveAll(work)
}
