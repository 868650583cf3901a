package main

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"go.yaml.in/yaml/v3"
)

const bundleLabelPrefix = "operators.operatorframework.io.bundle."

// requiredBundleLabels are the labels (and annotations) a registry+v1 bundle
// image carries.
var requiredBundleLabels = []string{
	bundleLabelPrefix + "mediatype.v1",
	bundleLabelPrefix + "manifests.v1",
	bundleLabelPrefix + "metadata.v1",
	bundleLabelPrefix + "package.v1",
	bundleLabelPrefix + "channels.v1",
}

// checkBundle checks a bundle Dockerfile: an image FROM scratch that holds
// the bundle's manifests and metadata where its labels say, with labels that
// repeat the annotations of its metadata/annotations.yaml.
func checkBundle(df *dockerfile, ctx *buildContext) ([]finding, error) {
	r := &report{file: df.name}
	args := symbolicArgs()
	if err := checkCopySources(r, df, ctx, args); err != nil {
		return nil, err
	}
	last := len(df.stages) - 1
	s := df.stages[last]
	at := line(s.Location)
	if base, err := df.baseImage(last, args); err != nil {
		return nil, err
	} else if !strings.EqualFold(base, "scratch") {
		r.add(at, "BundleBase", "a bundle image holds only manifests and metadata: build it FROM scratch, not %s", cmpOr(base, "stage "+s.BaseName))
	}
	labels, err := stageLabels(df, last, args)
	if err != nil {
		return nil, err
	}
	for _, k := range requiredBundleLabels {
		if _, ok := labels[k]; !ok {
			r.add(at, "BundleLabels", "missing LABEL %s", k)
		}
	}
	if v, ok := labels[bundleLabelPrefix+"mediatype.v1"]; ok && v != "registry+v1" {
		r.add(at, "BundleLabels", "LABEL %smediatype.v1=%s: OLM reads registry+v1 bundles", bundleLabelPrefix, v)
	}
	files, err := stageContextFiles(df, ctx, last, 0, args)
	if err != nil {
		return nil, err
	}
	for _, k := range []string{bundleLabelPrefix + "manifests.v1", bundleLabelPrefix + "metadata.v1", "operators.operatorframework.io.test.config.v1"} {
		if dir, ok := labels[k]; ok && !holdsFiles(files, resolve("/", dir)) {
			r.add(at, "BundleContent", "LABEL %s=%s, but no COPY puts files into %s", k, dir, resolve("/", dir))
		}
	}
	dir, ok := labels[bundleLabelPrefix+"metadata.v1"]
	if !ok {
		return r.findings, nil
	}
	annotationsAt := path.Join(resolve("/", dir), "annotations.yaml")
	f, ok := files[annotationsAt]
	if !ok {
		r.add(at, "BundleContent", "the image has no %s: COPY the bundle's metadata directory to %s", annotationsAt, resolve("/", dir))
		return r.findings, nil
	}
	annotations, err := readAnnotations(filepath.Join(ctx.dir, filepath.FromSlash(f.src)))
	if err != nil {
		return nil, err
	}
	compareLabels(r, at, labels, annotations, f.src)
	return r.findings, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// stageLabels returns the LABELs of stage i, expanded.
func stageLabels(df *dockerfile, i int, args buildArgs) (map[string]string, error) {
	labels := map[string]string{}
	_, err := df.walk(i, args, func(cmd instructions.Command, st state) error {
		l, ok := cmd.(*instructions.LabelCommand)
		if !ok {
			return nil
		}
		for _, kv := range l.Labels {
			k, err := df.expand(kv.Key, st.vars)
			if err != nil {
				return err
			}
			v, err := df.expand(kv.Value, st.vars)
			if err != nil {
				return err
			}
			labels[k] = v
		}
		return nil
	})
	return labels, err
}

func holdsFiles(files map[string]file, dir string) bool {
	for p, f := range files {
		if _, ok := relTo(dir, p); ok && p != dir && !f.mode.IsDir() {
			return true
		}
	}
	return false
}

func readAnnotations(p string) (map[string]string, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Annotations map[string]string `yaml:"annotations"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", p, err)
	}
	return doc.Annotations, nil
}

// compareLabels checks that the image's labels repeat the bundle's
// annotations, and that it has no bundle label the annotations lack: OLM
// reads one or the other depending on how it unpacks the bundle.
func compareLabels(r *report, at int, labels, annotations map[string]string, annotationsFile string) {
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		switch v, ok := labels[k]; {
		case !ok:
			r.add(at, "BundleLabels", "missing LABEL %s=%s (from %s)", k, annotations[k], annotationsFile)
		case v != annotations[k]:
			r.add(at, "BundleLabels", "LABEL %s=%s, but %s has %s", k, v, annotationsFile, annotations[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if _, ok := annotations[k]; !ok && strings.HasPrefix(k, bundleLabelPrefix) {
			r.add(at, "BundleLabels", "LABEL %s is not in %s", k, annotationsFile)
		}
	}
}
