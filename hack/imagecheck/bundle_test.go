package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A bundle.Dockerfile and annotations.yaml as `make bundle` writes them.
const (
	goodBundleDockerfile = `FROM scratch

# Core bundle labels.
LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=echo-operator
LABEL operators.operatorframework.io.bundle.channels.v1=alpha
LABEL operators.operatorframework.io.bundle.channel.default.v1=alpha
LABEL operators.operatorframework.io.metrics.builder=operator-sdk-v1.42.0
LABEL operators.operatorframework.io.metrics.mediatype.v1=metrics+v1
LABEL operators.operatorframework.io.metrics.project_layout=helm.sdk.operatorframework.io/v1

# Labels for testing.
LABEL operators.operatorframework.io.test.mediatype.v1=scorecard+v1
LABEL operators.operatorframework.io.test.config.v1=tests/scorecard/

# Copy files to locations specified by labels.
COPY bundle/manifests /manifests/
COPY bundle/metadata /metadata/
COPY bundle/tests/scorecard /tests/scorecard/
`
	goodAnnotations = `annotations:
  # Core bundle annotations.
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: echo-operator
  operators.operatorframework.io.bundle.channels.v1: alpha
  operators.operatorframework.io.bundle.channel.default.v1: alpha
  operators.operatorframework.io.metrics.builder: operator-sdk-v1.42.0
  operators.operatorframework.io.metrics.mediatype.v1: metrics+v1
  operators.operatorframework.io.metrics.project_layout: helm.sdk.operatorframework.io/v1

  # Annotations for testing.
  operators.operatorframework.io.test.mediatype.v1: scorecard+v1
  operators.operatorframework.io.test.config.v1: tests/scorecard/
`
)

// bundleRepo writes a repository with a bundle and returns its root.
func bundleRepo(t *testing.T, dockerfile, annotations string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"bundle/manifests/echo-operator.clusterserviceversion.yaml": "kind: ClusterServiceVersion\n",
		"bundle/manifests/echo.dev_echoes.yaml":                     "kind: CustomResourceDefinition\n",
		"bundle/metadata/annotations.yaml":                          annotations,
		"bundle/tests/scorecard/config.yaml":                        "kind: Configuration\n",
		".dockerignore":                                             "bin/\n",
	}
	if dockerfile != "" {
		files["bundle.Dockerfile"] = dockerfile
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func lintTestBundle(t *testing.T, root string) ([]finding, string) {
	t.Helper()
	var out bytes.Buffer
	found, err := lintBundle(context.Background(), root, filepath.Join(root, "bundle.Dockerfile"), amd64, &out)
	if err != nil {
		t.Fatal(err)
	}
	return found, out.String()
}

func TestBundleAbsentIsSkipped(t *testing.T) {
	found, out := lintTestBundle(t, bundleRepo(t, "", goodAnnotations))
	if len(found) > 0 || !strings.Contains(out, "not present, skipped") {
		t.Fatalf("found %v, output %q", found, out)
	}
}

func TestBundlePasses(t *testing.T) {
	found, out := lintTestBundle(t, bundleRepo(t, goodBundleDockerfile, goodAnnotations))
	if len(found) > 0 {
		t.Fatalf("want no findings, got:\n%v", found)
	}
	if !strings.Contains(out, "bundle.Dockerfile: ok") {
		t.Errorf("output %q", out)
	}
}

func TestBundleCatches(t *testing.T) {
	tests := []struct {
		name        string
		dockerfile  func(t *testing.T) string
		annotations string
		want        string
	}{{
		name: "base image",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "FROM scratch", "FROM alpine:3.22")
		},
		want: "BundleBase",
	}, {
		name: "channel label differs from the annotation",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "channels.v1=alpha", "channels.v1=stable")
		},
		want: "BundleLabels",
	}, {
		name: "annotation without a label",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "LABEL operators.operatorframework.io.bundle.package.v1=echo-operator\n", "")
		},
		want: "BundleLabels",
	}, {
		name: "bundle label without an annotation",
		dockerfile: func(*testing.T) string {
			return goodBundleDockerfile
		},
		annotations: strings.Replace(goodAnnotations, "  operators.operatorframework.io.bundle.channel.default.v1: alpha\n", "", 1),
		want:        "BundleLabels",
	}, {
		name: "wrong media type",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "mediatype.v1=registry+v1", "mediatype.v1=plain+v0")
		},
		annotations: strings.Replace(goodAnnotations, "mediatype.v1: registry+v1", "mediatype.v1: plain+v0", 1),
		want:        "BundleLabels",
	}, {
		name: "metadata not copied",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "COPY bundle/metadata /metadata/\n", "")
		},
		want: "BundleContent",
	}, {
		name: "manifests copied elsewhere than the label says",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "COPY bundle/manifests /manifests/", "COPY bundle/manifests /bundle/manifests/")
		},
		want: "BundleContent",
	}, {
		name: "missing source",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "COPY bundle/tests/scorecard /tests/scorecard/", "COPY bundle/tests/kuttl /tests/scorecard/")
		},
		want: "CopySource",
	}, {
		name: "buildkit check",
		dockerfile: func(t *testing.T) string {
			return replace(t, goodBundleDockerfile, "LABEL operators.operatorframework.io.bundle.package.v1=echo-operator", "LABEL operators.operatorframework.io.bundle.package.v1 echo-operator")
		},
		want: "buildkit/LegacyKeyValueFormat",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			annotations := tt.annotations
			if annotations == "" {
				annotations = goodAnnotations
			}
			found, _ := lintTestBundle(t, bundleRepo(t, tt.dockerfile(t), annotations))
			if !slices.Contains(rules(found), tt.want) {
				t.Fatalf("want %s among the findings, got:\n%v", tt.want, found)
			}
			for _, f := range found {
				t.Log(f)
			}
		})
	}
}
