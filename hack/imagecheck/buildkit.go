package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/moby/buildkit/client/llb"
	"github.com/moby/buildkit/client/llb/sourceresolver"
	"github.com/moby/buildkit/frontend/dockerfile/dockerfile2llb"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerui"
	digest "github.com/opencontainers/go-digest"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
)

// buildkitLint runs the checks of `docker build --check`: BuildKit's
// Dockerfile frontend converts the Dockerfile for every stage and reports
// what its linter finds, including the checks that need the whole build
// graph (undefined variables and stages, ARG defaults in FROM, secrets in
// ARG or ENV, ...). Base images are not pulled: offlineImages answers for
// them. A `# check=skip=...` directive in the Dockerfile is honoured, as
// BuildKit does.
func buildkitLint(ctx context.Context, name string, data []byte, platform ocispecs.Platform) ([]finding, error) {
	res, err := dockerfile2llb.DockerfileLint(ctx, data, dockerfile2llb.ConvertOpt{
		Config: dockerui.Config{
			TargetPlatforms: []ocispecs.Platform{platform},
			BuildPlatforms:  []ocispecs.Platform{platform},
		},
		MetaResolver: offlineImages{},
		SourceMap:    &llb.SourceMap{Definition: &llb.Definition{}, Filename: name, Language: "Dockerfile", Data: data},
	})
	if err != nil {
		return nil, fmt.Errorf("linting %s: %w", name, err)
	}
	var out []finding
	for _, w := range res.Warnings {
		l := 0
		if w.Location != nil && len(w.Location.Ranges) > 0 {
			l = int(w.Location.Ranges[0].Start.Line)
		}
		out = append(out, finding{file: name, line: l, rule: "buildkit/" + w.RuleName, msg: w.Detail + " (" + w.URL + ")"})
	}
	if res.Error != nil {
		l := 0
		if len(res.Error.Location.Ranges) > 0 {
			l = int(res.Error.Location.Ranges[0].Start.Line)
		}
		out = append(out, finding{file: name, line: l, rule: "buildkit/BuildError", msg: res.Error.Message})
	}
	return out, nil
}

// skippedChecks returns the BuildKit checks a `# check=` directive turns
// off, to be shown.
func skippedChecks(data []byte) string {
	v, _, _, ok := parser.ParseDirective("check", data)
	if !ok {
		return ""
	}
	return v
}

// offlineImages stands in for a registry: every base image is a one-layer
// image of the platform asked for.
type offlineImages struct{}

func (offlineImages) ResolveImageConfig(_ context.Context, ref string, opt sourceresolver.Opt) (string, digest.Digest, []byte, error) {
	img := ocispecs.Image{
		RootFS: ocispecs.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromString(ref)}},
	}
	if opt.ImageOpt != nil && opt.ImageOpt.Platform != nil {
		img.Platform = *opt.ImageOpt.Platform
	}
	dt, err := json.Marshal(img)
	return ref, "", dt, err
}
