package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestShellWords(t *testing.T) {
	df, err := parseDockerfile("Dockerfile", []byte("FROM scratch\n"))
	if err != nil {
		t.Fatal(err)
	}
	scope := env{"TARGETOS": "<TARGETOS>", "OUT": "bin/manager"}
	tests := []struct {
		line string
		want []string
	}{
		// BuildKit's several-words lexer would give "<TARGETOS>" alone here.
		{`GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-amd64} go build`, []string{"GOOS=<TARGETOS>", "GOARCH=amd64", "go", "build"}},
		{`go build -ldflags="-s -w" -o "$OUT" ./cmd/manager`, []string{"go", "build", "-ldflags=-s -w", "-o", "bin/manager", "./cmd/manager"}},
		{`go mod download&&CGO_ENABLED=0 go build -o 'a b';echo done|cat &`, []string{"go", "mod", "download", "&&", "CGO_ENABLED=0", "go", "build", "-o", "a b", ";", "echo", "done", "|", "cat", "&"}},
		{`echo a\ b "c \"d\""`, []string{"echo", "a b", `c "d"`}},
	}
	for _, tt := range tests {
		got, err := df.shellWords(tt.line, scope)
		if err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.line, got, tt.want)
		}
	}
	if _, err := df.shellWords(`echo "unterminated`, scope); err == nil {
		t.Error("want an error for an unterminated quote")
	}
}

func TestGoBuilds(t *testing.T) {
	df, err := parseDockerfile("Dockerfile", []byte(`FROM golang AS b
ARG TARGETARCH
ENV GOFLAGS=-mod=readonly
WORKDIR /src
RUN go mod download && CGO_ENABLED=0 GOARCH=$TARGETARCH go build -tags netgo -o /out/manager ./cmd/manager
RUN ["go", "build", "./cmd/echo-server"]
`))
	if err != nil {
		t.Fatal(err)
	}
	builds, err := df.goBuilds(0, symbolicArgs())
	if err != nil {
		t.Fatal(err)
	}
	if len(builds) != 2 {
		t.Fatalf("want 2 builds, got %+v", builds)
	}
	b := builds[0]
	if b.output != "/out/manager" || b.pkg != "./cmd/manager" || b.workdir != "/src" || b.line != 5 ||
		b.env["CGO_ENABLED"] != "0" || b.env["GOARCH"] != "<TARGETARCH>" || b.env["GOFLAGS"] != "-mod=readonly" ||
		!slices.Equal(b.flags, []string{"-tags=netgo"}) {
		t.Errorf("first build %+v", b)
	}
	if b := builds[1]; b.output != "/src/echo-server" || b.pkg != "./cmd/echo-server" {
		t.Errorf("second build %+v", b)
	}
}

func TestRepositoryFacts(t *testing.T) {
	got, err := managerWatchesDefault(filepath.Join(repoRoot, "cmd", "manager"))
	if err != nil || got != "watches.yaml" {
		t.Errorf("managerWatchesDefault = %q, %v", got, err)
	}
	cmd, err := deploymentCommand(filepath.Join(repoRoot, "config", "manager", "manager.yaml"), "manager")
	if err != nil || cmd != "/manager" {
		t.Errorf("deploymentCommand = %q, %v", cmd, err)
	}
}

func TestWatchesFlagDefault(t *testing.T) {
	src := filepath.Join(t.TempDir(), "main.go")
	prog := "package main\n\nimport \"flag\"\n\nfunc main() {\n\tflag.String(\"watches-file\", \"/etc/echo/watches.yaml\", \"\")\n}\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := watchesFlagDefault(src); err != nil || got != "/etc/echo/watches.yaml" {
		t.Errorf("watchesFlagDefault = %q, %v", got, err)
	}
}
