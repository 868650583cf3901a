// Command catalog renders the operator's file-based catalog from the bundle
// directory, and checks that the committed one is up to date:
//
//	go run ./hack/catalog render   # writes catalog/<package>/catalog.yaml
//	go run ./hack/catalog verify   # fails when that file is stale
//
// The bundle is rendered by opm into an olm.bundle blob whose image is the
// bundle image and whose CSV travels as olm.csv.metadata (OLM unpacks the
// manifests from the image). Its channel entry (name, spec.replaces,
// spec.skips, the olm.skipRange annotation) is added to each channel, and
// the package's default channel is set. Bundles and entries already in the
// catalog stay, so releases accumulate; rendering the same bundle again
// changes nothing. The result is written in opm's YAML form and must pass
// `opm validate`.
//
// Flags fall back to environment variables, as the Makefile passes them:
// -opm (OPM), -bundle-dir (BUNDLE_DIR, default bundle), -catalog-dir
// (CATALOG_DIR, default catalog), -bundle-image (BUNDLE_IMG, required),
// -version (VERSION: when set, the bundle's version must match it),
// -channels (CHANNELS, comma-separated) and -default-channel
// (DEFAULT_CHANNEL); the last two default to the bundle's
// metadata/annotations.yaml.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/echo-operator/echo-operator/hack/catalog/fbc"
)

// Keys of a bundle's metadata/annotations.yaml.
const (
	channelsAnnotation       = "operators.operatorframework.io.bundle.channels.v1"
	defaultChannelAnnotation = "operators.operatorframework.io.bundle.channel.default.v1"
)

type options struct {
	opm            string
	bundleDir      string
	catalogDir     string
	bundleImage    string
	version        string
	channels       string
	defaultChannel string
}

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "render" && os.Args[1] != "verify") {
		fmt.Fprintln(os.Stderr, "usage: catalog render|verify [flags]")
		os.Exit(2)
	}
	cmd := os.Args[1]
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	var o options
	fs.StringVar(&o.opm, "opm", os.Getenv("OPM"), "path of the opm binary (`make olm` builds it)")
	fs.StringVar(&o.bundleDir, "bundle-dir", envOr("BUNDLE_DIR", "bundle"), "the registry+v1 bundle directory")
	fs.StringVar(&o.catalogDir, "catalog-dir", envOr("CATALOG_DIR", "catalog"), "the catalog directory")
	fs.StringVar(&o.bundleImage, "bundle-image", os.Getenv("BUNDLE_IMG"), "the bundle image the catalog points at")
	fs.StringVar(&o.version, "version", os.Getenv("VERSION"), "the expected bundle version (optional)")
	fs.StringVar(&o.channels, "channels", os.Getenv("CHANNELS"), "channels of the bundle, comma-separated (default: the bundle's annotations)")
	fs.StringVar(&o.defaultChannel, "default-channel", os.Getenv("DEFAULT_CHANNEL"), "the package's default channel (default: the bundle's annotations)")
	_ = fs.Parse(os.Args[2:])

	var err error
	switch cmd {
	case "render":
		var file string
		if file, err = render(context.Background(), o); err == nil {
			fmt.Println("wrote", file)
		}
	case "verify":
		err = verify(context.Background(), o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// render updates (or creates) the package's catalog file and returns its path.
func render(ctx context.Context, o options) (string, error) {
	c, pkg, err := build(ctx, o)
	if err != nil {
		return "", err
	}
	file := filepath.Join(o.catalogDir, pkg, fbc.FileName)
	return file, fbc.OPM{Path: o.opm}.WriteYAML(ctx, c, file)
}

// verify renders into a temporary file and compares it with the committed one.
func verify(ctx context.Context, o options) error {
	c, pkg, err := build(ctx, o)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "echo-catalog-verify-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	want := filepath.Join(tmp, pkg, fbc.FileName)
	if err := (fbc.OPM{Path: o.opm}).WriteYAML(ctx, c, want); err != nil {
		return err
	}
	file := filepath.Join(o.catalogDir, pkg, fbc.FileName)
	got, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	wantData, err := os.ReadFile(want)
	if err != nil {
		return err
	}
	if bytes.Equal(got, wantData) {
		return nil
	}
	diff, _ := exec.Command("diff", "-u", file, want).CombinedOutput()
	return fmt.Errorf("%s%s is not up to date with %s: run `make catalog` and commit the result",
		diff, file, o.bundleDir)
}

// build renders the bundle and merges it into the committed catalog of its
// package, returning the result and the package name.
func build(ctx context.Context, o options) (*fbc.Catalog, string, error) {
	if o.opm == "" {
		return nil, "", errors.New("no opm: set OPM or -opm (`make olm` builds it)")
	}
	if o.bundleImage == "" {
		return nil, "", errors.New("no bundle image: set BUNDLE_IMG or -bundle-image")
	}
	channels, defaultChannel, err := bundleChannels(o)
	if err != nil {
		return nil, "", err
	}
	opm := fbc.OPM{Path: o.opm}
	// The CSV comes from the bundle's objects; the published blob carries
	// only its metadata.
	full, err := opm.RenderBundle(ctx, o.bundleDir, o.bundleImage, false)
	if err != nil {
		return nil, "", err
	}
	csv, err := full.CSV()
	if err != nil {
		return nil, "", err
	}
	pkg, version, err := full.PackageVersion()
	if err != nil {
		return nil, "", err
	}
	if want := strings.TrimPrefix(o.version, "v"); want != "" && want != version {
		return nil, "", fmt.Errorf("%s holds version %s, not %s: regenerate it (`make bundle`)", o.bundleDir, version, want)
	}
	published, err := opm.RenderBundle(ctx, o.bundleDir, o.bundleImage, true)
	if err != nil {
		return nil, "", err
	}

	c := &fbc.Catalog{}
	if _, err := os.Stat(filepath.Join(o.catalogDir, pkg, fbc.FileName)); err == nil {
		if c, err = opm.Load(ctx, filepath.Join(o.catalogDir, pkg)); err != nil {
			return nil, "", fmt.Errorf("loading the catalog of %s: %w", pkg, err)
		}
	}
	c.SetPackage(pkg, defaultChannel, csv.Icon)
	for _, ch := range channels {
		c.SetEntry(pkg, ch, csv.Entry())
	}
	c.SetBundle(published)
	return c, pkg, nil
}

// bundleChannels returns the channels and default channel from the options,
// or else from the bundle's metadata/annotations.yaml.
func bundleChannels(o options) ([]string, string, error) {
	channels, def := o.channels, o.defaultChannel
	if channels == "" || def == "" {
		a, err := bundleAnnotations(o.bundleDir)
		if err != nil {
			return nil, "", err
		}
		if channels == "" {
			channels = a[channelsAnnotation]
		}
		if def == "" {
			def = a[defaultChannelAnnotation]
		}
	}
	var out []string
	for _, ch := range strings.Split(channels, ",") {
		if ch = strings.TrimSpace(ch); ch != "" {
			out = append(out, ch)
		}
	}
	if len(out) == 0 {
		return nil, "", fmt.Errorf("no channels: set CHANNELS or %s in %s/metadata/annotations.yaml", channelsAnnotation, o.bundleDir)
	}
	if def == "" {
		if len(out) > 1 {
			return nil, "", fmt.Errorf("no default channel among %v: set DEFAULT_CHANNEL", out)
		}
		def = out[0]
	}
	return out, def, nil
}

func bundleAnnotations(bundleDir string) (map[string]string, error) {
	path := filepath.Join(bundleDir, "metadata", "annotations.yaml")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return doc.Annotations, nil
}
