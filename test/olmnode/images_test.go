package olmnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/olmbundle"
)

const (
	// packageName is the operator's package in the catalog.
	packageName = "echo-operator"
	// currentVersion is bundle/'s; previousVersion that of a made-up
	// earlier release (the same manifests) it upgrades from.
	currentVersion, previousVersion = "0.1.0", "0.0.9"
	// org is the organisation on quay.io of the images the bundle names.
	org = "echo-operator"
)

// suiteImages are the references of the images setUp built, as the
// bundle, the catalog and OLM's manifests name them.
type suiteImages struct {
	// Operator is the image the committed bundle's CSV names.
	Operator string
	// Project are the operator's and echo server's images as built, with
	// their digests.
	Project []imagebuild.ProjectImage
	// OLM and OPM are OLM's image (olm, catalog, package-server, cpb) and
	// opm's, which serves catalogs and unpacks bundles.
	OLM, OPM string
	// Catalog is the catalog image of both releases.
	Catalog string
	// OperatorController and Catalogd are OLM v1's images.
	OperatorController, Catalogd string
}

// csvName is the CSV of the package's release version.
func csvName(version string) string { return packageName + ".v" + version }

// bundleImage is the bundle image of the release version.
func bundleImage(version string) string {
	return "quay.io/" + org + "/echo-operator-bundle:v" + version
}

// buildImages builds, with BuildKit, every image the suite's cluster runs
// but the node's own: the project's from its Dockerfile under the names
// the committed bundle gives them, OLM's and opm's from theirs, the bundle
// images of both releases from bundle.Dockerfile and the catalog image
// from catalog.Dockerfile; and OLM v1's from its Dockerfiles.
func buildImages(ctx context.Context) error {
	bins, err := imagebuild.LocateBinaries()
	if err != nil {
		return err
	}
	sources, err := imagebuild.LocateOLMSources()
	if err != nil {
		return err
	}
	if builder, err = imagebuild.Start(ctx, imagebuild.Options{Binaries: bins, WorkDir: filepath.Join(workDir, "images")}); err != nil {
		return fmt.Errorf("starting the image builder: %w", err)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w (logs in %s)", err, builder.LogDir())
		}
	}()
	project, err := builder.BuildProjectIn(ctx, repoRoot, currentVersion, org, "v"+currentVersion)
	if err != nil {
		return err
	}
	images.Project = project
	for _, img := range project {
		if img.Target == "operator" {
			images.Operator = "quay.io/" + img.Repo + ":" + img.Tag
		}
	}
	olm, err := builder.BuildOLM(ctx, sources)
	if err != nil {
		return err
	}
	images.OLM, images.OPM = olm.OLM, olm.OPM
	olmv1Sources, err := imagebuild.LocateOLMv1Sources()
	if err != nil {
		return err
	}
	olmv1, err := builder.BuildOLMv1(ctx, olmv1Sources)
	if err != nil {
		return err
	}
	images.OperatorController, images.Catalogd = olmv1.OperatorController, olmv1.Catalogd
	if err := buildBundles(ctx); err != nil {
		return err
	}
	return buildCatalog(ctx)
}

// buildBundles builds the bundle image of bundle/ and of the made-up
// previous release from bundle.Dockerfile.
func buildBundles(ctx context.Context) error {
	for version, make := range map[string]func(dest string) error{
		currentVersion: func(dest string) error { return os.CopyFS(dest, os.DirFS(filepath.Join(repoRoot, "bundle"))) },
		previousVersion: func(dest string) error {
			return olmbundle.Previous(filepath.Join(repoRoot, "bundle"), dest, packageName, previousVersion)
		},
	} {
		dir := filepath.Join(workDir, "bundle-"+version)
		if err := make(filepath.Join(dir, "bundle")); err != nil {
			return fmt.Errorf("the bundle of %s: %w", version, err)
		}
		_, err := builder.Build(ctx, imagebuild.Build{Context: dir, Dockerfile: filepath.Join(repoRoot, "bundle.Dockerfile"),
			Ref: builder.Ref(org+"/echo-operator-bundle", "v"+version)})
		if err != nil {
			return err
		}
	}
	return nil
}

// buildCatalog builds the catalog image from catalog.Dockerfile: the
// published catalog (catalog/echo-operator, which `make catalog` renders)
// with the previous release before the current one in each channel, whose
// entry then replaces it, as a second release's catalog has it.
func buildCatalog(ctx context.Context) error {
	blobs, err := readBlobs(filepath.Join(repoRoot, "catalog", packageName, "catalog.yaml"))
	if err != nil {
		return err
	}
	var out []map[string]any
	for _, b := range blobs {
		switch b["schema"] {
		case "olm.channel":
			entries, _ := b["entries"].([]any)
			for _, e := range entries {
				if entry := e.(map[string]any); entry["name"] == csvName(currentVersion) {
					entry["replaces"] = csvName(previousVersion)
				}
			}
			b["entries"] = append([]any{map[string]any{"name": csvName(previousVersion)}}, entries...)
		case "olm.bundle":
			if b["name"] == csvName(currentVersion) {
				out = append(out, previousBundleBlob(b))
			}
		}
		out = append(out, b)
	}
	dir := filepath.Join(workDir, "catalog")
	var buf bytes.Buffer
	for _, b := range out {
		y, err := sigsyaml.Marshal(b)
		if err != nil {
			return err
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	if err := os.MkdirAll(filepath.Join(dir, "catalog", packageName), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog", packageName, "catalog.yaml"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	ref := builder.Ref(org+"/echo-operator-catalog", "v"+currentVersion)
	if _, err := builder.Build(ctx, imagebuild.Build{Context: dir, Dockerfile: filepath.Join(repoRoot, "catalog.Dockerfile"), Ref: ref}); err != nil {
		return err
	}
	images.Catalog = "quay.io/" + org + "/echo-operator-catalog:v" + currentVersion
	return nil
}

// previousBundleBlob is the catalog's olm.bundle of the previous release,
// made from the current one's: its name, image and package version.
func previousBundleBlob(current map[string]any) map[string]any {
	y, _ := sigsyaml.Marshal(current)
	prev := map[string]any{}
	_ = sigsyaml.Unmarshal(y, &prev)
	prev["name"], prev["image"] = csvName(previousVersion), bundleImage(previousVersion)
	for _, p := range prev["properties"].([]any) {
		prop := p.(map[string]any)
		if prop["type"] == "olm.package" {
			prop["value"].(map[string]any)["version"] = previousVersion
		}
	}
	return prev
}

// readBlobs reads the YAML documents of a file-based catalog.
func readBlobs(file string) ([]map[string]any, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	var blobs []map[string]any
	for {
		b := map[string]any{}
		err := dec.Decode(&b)
		if errors.Is(err, io.EOF) {
			return blobs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if len(b) > 0 {
			blobs = append(blobs, b)
		}
	}
}
