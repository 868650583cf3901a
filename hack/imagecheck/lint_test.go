package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/moby/patternmatcher"
	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
)

// The tests read the repository (two levels up) as the build context.
const repoRoot = "../.."

var amd64 = ocispecs.Platform{OS: "linux", Architecture: "amd64"}

func testFlags() repoFlags {
	return repoFlags{root: repoRoot, target: "operator", managerPkg: "./cmd/manager", uid: "65532", platform: "linux/amd64", watchesFile: "watches.yaml"}
}

// repoSpec is the operator spec of the repository; its go list results are
// shared by the tests.
var repoSpec = sync.OnceValues(func() (operatorSpec, error) {
	rf := testFlags()
	return rf.spec()
})

func testSpec(t *testing.T) operatorSpec {
	t.Helper()
	spec, err := repoSpec()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func repoDockerfile(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func repoContext(t *testing.T) *buildContext {
	t.Helper()
	ctx, err := openContext(repoRoot, filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// ignoring is the repository's context with other ignore patterns.
func ignoring(t *testing.T, patterns ...string) *buildContext {
	t.Helper()
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return &buildContext{dir: repoRoot, ignoreFile: ".dockerignore", pm: pm}
}

// replace replaces old in s, and fails when s does not hold it, so that a
// change of the Dockerfile breaks the test instead of emptying it.
func replace(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("the Dockerfile no longer holds %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

// lint runs BuildKit's checks and the operator rules on a Dockerfile.
func lint(t *testing.T, dockerfile string, ctx *buildContext) []finding {
	t.Helper()
	found, err := buildkitLint(context.Background(), "Dockerfile", []byte(dockerfile), amd64)
	if err != nil {
		t.Fatal(err)
	}
	df, err := parseDockerfile("Dockerfile", []byte(dockerfile))
	if err != nil {
		t.Fatal(err)
	}
	rules, err := checkOperator(df, ctx, testSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	return append(found, rules...)
}

func rules(found []finding) []string {
	var out []string
	for _, f := range found {
		if !slices.Contains(out, f.rule) {
			out = append(out, f.rule)
		}
	}
	return out
}

func TestRepositoryDockerfilePasses(t *testing.T) {
	var out bytes.Buffer
	found, err := lintOperator(context.Background(), repoRoot, filepath.Join(repoRoot, "Dockerfile"), testSpec(t), amd64, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("the repository's Dockerfile has problems:\n%v", found)
	}
	if !strings.Contains(out.String(), "Dockerfile: ok") {
		t.Errorf("output: %q", out.String())
	}
}

func TestRepositoryBundleDockerfile(t *testing.T) {
	var out bytes.Buffer
	found, err := lintBundle(context.Background(), repoRoot, filepath.Join(repoRoot, "bundle.Dockerfile"), amd64, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Fatalf("the repository's bundle.Dockerfile has problems:\n%v", found)
	}
	t.Log(strings.TrimSpace(out.String()))
}

// TestNodeImagesDockerfile: the node images' Dockerfile passes BuildKit's
// checks, and a stage those checks flag is reported.
func TestNodeImagesDockerfile(t *testing.T) {
	var out bytes.Buffer
	found, err := lintNodeImages(context.Background(), repoRoot, filepath.Join(repoRoot, nodeDockerfile), amd64, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 || !strings.Contains(out.String(), "node.Dockerfile: ok") {
		t.Fatalf("the repository's %s: %v, output %q", nodeDockerfile, found, out.String())
	}
	bad := filepath.Join(t.TempDir(), "node.Dockerfile")
	if err := os.WriteFile(bad, []byte("FROM scratch as pause\nCOPY pause/pause /pause\nENTRYPOINT /pause\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	found, err = lintNodeImages(context.Background(), repoRoot, bad, amd64, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rules := rules(found); !slices.Contains(rules, "buildkit/FromAsCasing") || !slices.Contains(rules, "buildkit/JSONArgsRecommended") {
		t.Errorf("findings %v, want buildkit/FromAsCasing and buildkit/JSONArgsRecommended", rules)
	}
}

func TestLintCatches(t *testing.T) {
	const operatorUser = "USER 65532:65532\nENTRYPOINT [\"/manager\"]"
	tests := []struct {
		name string
		edit func(t *testing.T, df string) string
		ctx  func(t *testing.T) *buildContext
		want string // a rule that must be among the findings
	}{{
		name: "root user",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "USER root\nENTRYPOINT [\"/manager\"]")
		},
		want: "NonRootUser",
	}, {
		name: "uid 0",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "USER 0:0\nENTRYPOINT [\"/manager\"]")
		},
		want: "NonRootUser",
	}, {
		name: "named non-root user",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "USER nonroot:nonroot\nENTRYPOINT [\"/manager\"]")
		},
		want: "NonRootUser",
	}, {
		name: "no user",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "ENTRYPOINT [\"/manager\"]")
		},
		want: "NonRootUser",
	}, {
		name: "single stage",
		edit: func(*testing.T, string) string {
			return `FROM golang:1.26 AS operator
ARG TARGETOS
ARG TARGETARCH
WORKDIR /workspace
COPY go.mod go.sum ./
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -o /manager ./cmd/manager
COPY watches.yaml /workspace/watches.yaml
COPY helm-charts/ /workspace/helm-charts/
USER 65532:65532
ENTRYPOINT ["/manager"]
`
		},
		want: "MultiStage",
	}, {
		name: "watches.yaml not copied",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY watches.yaml /watches.yaml\n", "")
		},
		want: "WatchesFile",
	}, {
		name: "watches.yaml copied away from the working directory",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY watches.yaml /watches.yaml\n", "COPY watches.yaml /etc/echo/watches.yaml\n")
		},
		want: "WatchesFile",
	}, {
		name: "working directory moved without the files",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "WORKDIR /app\n"+operatorUser)
		},
		want: "Charts",
	}, {
		name: "charts not copied",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY helm-charts/ /helm-charts/\n", "")
		},
		want: "Charts",
	}, {
		name: "charts unreadable by the user",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY helm-charts/ /helm-charts/\n", "COPY --chmod=0600 helm-charts/ /helm-charts/\n")
		},
		want: "Readable",
	}, {
		name: "chart templates excluded by .dockerignore",
		ctx:  func(t *testing.T) *buildContext { return ignoring(t, "bin", "**/templates") },
		want: "Charts",
	}, {
		name: "watches.yaml excluded by .dockerignore",
		ctx:  func(t *testing.T) *buildContext { return ignoring(t, "bin", "*.yaml") },
		want: "CopyIgnoredFile",
	}, {
		name: "FROM ... as casing",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "golang:1.26 AS builder", "golang:1.26 as builder")
		},
		want: "buildkit/FromAsCasing",
	}, {
		name: "MAINTAINER",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "MAINTAINER someone@example.com\n"+operatorUser)
		},
		want: "buildkit/MaintainerDeprecated",
	}, {
		name: "undefined variable",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "ENV WATCHES_FILE=$WATCHES\n"+operatorUser)
		},
		want: "buildkit/UndefinedVar",
	}, {
		name: "base with a shell and a package manager",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "FROM gcr.io/distroless/static:nonroot AS operator", "FROM alpine:3.22 AS operator")
		},
		want: "FinalBase",
	}, {
		name: "operator built FROM the builder",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "FROM gcr.io/distroless/static:nonroot AS operator", "FROM builder AS operator")
		},
		want: "FinalBase",
	}, {
		name: "cgo left on",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \\\n    go build -trimpath -ldflags=\"-s -w -X main.version=${VERSION}\" -o manager",
				"GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \\\n    go build -trimpath -ldflags=\"-s -w -X main.version=${VERSION}\" -o manager")
		},
		want: "StaticBinary",
	}, {
		name: "architecture fixed",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "GOARCH=${TARGETARCH} \\\n    go build -trimpath -ldflags=\"-s -w -X main.version=${VERSION}\" -o manager",
				"GOARCH=amd64 \\\n    go build -trimpath -ldflags=\"-s -w -X main.version=${VERSION}\" -o manager")
		},
		want: "MultiArch",
	}, {
		name: "TARGETARCH not declared in the builder",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "ARG TARGETARCH\n", "")
		},
		want: "MultiArch",
	}, {
		name: "builder pulled for the target platform",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "FROM --platform=$BUILDPLATFORM golang:1.26 AS builder", "FROM golang:1.26 AS builder")
		},
		want: "CrossCompile",
	}, {
		name: "shell-form entrypoint",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, operatorUser, "USER 65532:65532\nENTRYPOINT /manager")
		},
		want: "Entrypoint",
	}, {
		name: "entrypoint elsewhere than the Deployment runs",
		edit: func(t *testing.T, df string) string {
			df = replace(t, df, "COPY --from=builder /workspace/manager /manager", "COPY --from=builder /workspace/manager /usr/bin/manager")
			return replace(t, df, operatorUser, "USER 65532:65532\nENTRYPOINT [\"/usr/bin/manager\"]")
		},
		want: "Entrypoint",
	}, {
		name: "operator runs the echo server",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY --from=builder /workspace/manager /manager", "COPY --from=builder /workspace/echo-server /manager")
		},
		want: "Entrypoint",
	}, {
		name: "COPY of a file the context lacks",
		edit: func(t *testing.T, df string) string {
			return replace(t, df, "COPY watches.yaml /watches.yaml\n", "COPY watches.yaml /watches.yaml\nCOPY extra-watches.yaml /extra.yaml\n")
		},
		want: "CopySource",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			df := repoDockerfile(t)
			if tt.edit != nil {
				df = tt.edit(t, df)
			}
			ctx := repoContext(t)
			if tt.ctx != nil {
				ctx = tt.ctx(t)
			}
			found := lint(t, df, ctx)
			if !slices.Contains(rules(found), tt.want) {
				t.Fatalf("want %s among the findings, got:\n%v", tt.want, found)
			}
			for _, f := range found {
				t.Log(f)
			}
		})
	}
}

func TestTargetMustBeLast(t *testing.T) {
	df, err := parseDockerfile("Dockerfile", []byte(repoDockerfile(t)))
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(t)
	spec.target = "echo-server"
	found, err := checkOperator(df, repoContext(t), spec)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rules(found), "TargetIsLast") {
		t.Fatalf("want TargetIsLast, got %v", found)
	}
}

func TestSkipDirectiveIsReported(t *testing.T) {
	data := []byte("# check=skip=FromAsCasing\nFROM scratch as x\n")
	found, err := buildkitLint(context.Background(), "Dockerfile", data, amd64)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Fatalf("the directive skips FromAsCasing, got %v", found)
	}
	if got := skipNote(data); !strings.Contains(got, "skip=FromAsCasing") {
		t.Errorf("skipNote = %q", got)
	}
}

func TestBuildErrorFails(t *testing.T) {
	found, err := buildkitLint(context.Background(), "Dockerfile", []byte("FROM scratch\nCOPY a /a\nFETCH b /b\n"), amd64)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) == 0 {
		t.Fatal("want a finding for an unknown instruction")
	}
}
