package imagebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// OLMv1Sources are the inputs of OLM v1's images as hack/build-olmv1.sh
// leaves them (`make olmv1`), which the Makefile passes as OLMV1_DIR.
type OLMv1Sources struct {
	// Dir holds operator-controller and catalogd, static; their images'
	// Dockerfiles (image/); and the release's manifest (release/). Its
	// name is OLM v1's version (bin/olmv1/v1.2.0).
	Dir string `env:"OLMV1_DIR"`
}

// LocateOLMv1Sources reads OLMv1Sources from the environment.
func LocateOLMv1Sources() (OLMv1Sources, error) {
	s := OLMv1Sources{Dir: os.Getenv("OLMV1_DIR")}
	if s.Dir == "" {
		return s, fmt.Errorf("$OLMV1_DIR is not set: run `make olmv1`, or the tests through make")
	}
	for _, f := range append(s.managers(), s.Manifest()) {
		if _, err := os.Stat(f); err != nil {
			return s, fmt.Errorf("$OLMV1_DIR: %w", err)
		}
	}
	return s, nil
}

// Version is OLM v1's version, as its directory names it.
func (s OLMv1Sources) Version() string { return filepath.Base(s.Dir) }

// Manifest is the release's manifest, operator-controller.yaml: the
// namespace olmv1-system, the CRDs, both managers and their RBAC, and the
// cert-manager objects that issue their certificates.
func (s OLMv1Sources) Manifest() string {
	return filepath.Join(s.Dir, "release", "operator-controller.yaml")
}

// olmv1Managers are the binaries of OLM v1, each the only one of its image.
var olmv1Managers = []string{"operator-controller", "catalogd"}

func (s OLMv1Sources) managers() []string {
	var out []string
	for _, m := range olmv1Managers {
		out = append(out, filepath.Join(s.Dir, m))
	}
	return out
}

// OLMv1Images are the references, under quay.io, of the images BuildOLMv1
// pushed, as the release's manifest names them.
type OLMv1Images struct {
	OperatorController, Catalogd string
}

// BuildOLMv1 builds operator-controller's and catalogd's images from their
// release's Dockerfiles, which copy the binary from the context's root onto
// distroless/static:nonroot (whose stand-in Start pushed), and pushes them
// under operator-framework/, the names of quay.io, which the registry
// mirrors.
func (e *Env) BuildOLMv1(ctx context.Context, s OLMv1Sources) (OLMv1Images, error) {
	refs := map[string]string{}
	for _, m := range olmv1Managers {
		repo := "operator-framework/" + m
		if _, err := e.Build(ctx, Build{Context: s.Dir, Dockerfile: filepath.Join(s.Dir, "image", "Dockerfile."+m),
			Ref: e.Ref(repo, s.Version())}); err != nil {
			return OLMv1Images{}, fmt.Errorf("OLM v1's %s image: %w", m, err)
		}
		refs[m] = "quay.io/" + repo + ":" + s.Version()
	}
	return OLMv1Images{OperatorController: refs["operator-controller"], Catalogd: refs["catalogd"]}, nil
}
