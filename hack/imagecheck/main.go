package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	ocispecs "github.com/opencontainers/image-spec/specs-go/v1"
	"go.yaml.in/yaml/v3"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: imagecheck lint [flags]

  lint    check Dockerfile, and bundle.Dockerfile when present
`

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		_, _ = fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "lint":
		err = lintCommand(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		_, _ = fmt.Fprint(stdout, usage)
		return 0
	default:
		_, _ = fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
		return 2
	}
	var failed *failedError
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &failed):
		_, _ = fmt.Fprintln(stderr, err)
		return 1
	case err != nil:
		_, _ = fmt.Fprintln(stderr, "imagecheck:", err)
		return 1
	}
	return 0
}

// failedError reports that checks found problems, already printed.
type failedError struct{ what string }

func (e *failedError) Error() string { return e.what }

// repoFlags are the flags that locate the repository and describe the
// operator image.
type repoFlags struct {
	root        string
	dockerfile  string
	target      string
	managerPkg  string
	uid         string
	platform    string
	watchesFile string
}

func (f *repoFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.root, "root", ".", "Root of the repository: the build context and the Go module of the manager.")
	fs.StringVar(&f.dockerfile, "dockerfile", "", "The operator's Dockerfile (default <root>/Dockerfile).")
	fs.StringVar(&f.target, "target", "operator", "The Dockerfile stage of the operator image; empty for the last stage.")
	fs.StringVar(&f.managerPkg, "manager-package", "./cmd/manager", "The manager's Go package, relative to the root.")
	fs.StringVar(&f.uid, "uid", "65532", "The numeric user the images must run as.")
	fs.StringVar(&f.platform, "platform", "linux/amd64", "The platform to build for (os/arch).")
	fs.StringVar(&f.watchesFile, "watches", "watches.yaml", "The watches file, relative to the root.")
}

func (f *repoFlags) dockerfilePath() string {
	if f.dockerfile != "" {
		return f.dockerfile
	}
	return filepath.Join(f.root, "Dockerfile")
}

func (f *repoFlags) parsedPlatform() (ocispecs.Platform, error) {
	osName, arch, ok := strings.Cut(f.platform, "/")
	if !ok || osName == "" || arch == "" || strings.Contains(arch, "/") {
		return ocispecs.Platform{}, fmt.Errorf("-platform %q: want os/arch, such as linux/amd64", f.platform)
	}
	return ocispecs.Platform{OS: osName, Architecture: arch}, nil
}

// spec reads what the operator image must hold from the repository.
func (f *repoFlags) spec() (operatorSpec, error) {
	s := operatorSpec{
		target:       f.target,
		managerPkg:   f.managerPkg,
		uid:          f.uid,
		watchesSrc:   contextPath(f.watchesFile),
		allowedBases: defaultBases,
	}
	data, err := os.ReadFile(filepath.Join(f.root, filepath.FromSlash(s.watchesSrc)))
	if err != nil {
		return s, err
	}
	if s.watches, err = parseWatches(data); err != nil {
		return s, err
	}
	if s.watchesPath, err = managerWatchesDefault(filepath.Join(f.root, filepath.FromSlash(f.managerPkg))); err != nil {
		return s, err
	}
	if s.managerPath, err = deploymentCommand(filepath.Join(f.root, "config", "manager", "manager.yaml"), "manager"); err != nil {
		return s, err
	}
	return s, nil
}

// managerWatchesDefault finds the default of --watches-file in the
// manager's package.
func managerWatchesDefault(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var lastErr error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		v, err := watchesFlagDefault(filepath.Join(dir, e.Name()))
		if err == nil {
			return v, nil
		}
		lastErr = err
	}
	return "", fmt.Errorf("%s: found no --watches-file flag: %w", dir, lastErr)
}

// deploymentCommand returns command[0] of the container named container in
// the Deployment of manifest: the path the cluster runs the manager from.
func deploymentCommand(manifest, container string) (string, error) {
	data, err := os.ReadFile(manifest)
	if err != nil {
		return "", err
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc struct {
			Kind string `yaml:"kind"`
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Name    string   `yaml:"name"`
							Command []string `yaml:"command"`
						} `yaml:"containers"`
					} `yaml:"spec"`
				} `yaml:"template"`
			} `yaml:"spec"`
		}
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("decoding %s: %w", manifest, err)
		}
		if doc.Kind != "Deployment" {
			continue
		}
		for _, c := range doc.Spec.Template.Spec.Containers {
			if c.Name == container && len(c.Command) > 0 {
				return c.Command[0], nil
			}
		}
	}
	return "", fmt.Errorf("%s: no Deployment with a container %q that sets command", manifest, container)
}

func lintCommand(argv []string, stdout, stderr io.Writer) error {
	fset := flag.NewFlagSet("imagecheck lint", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var rf repoFlags
	rf.register(fset)
	bundle := fset.String("bundle-dockerfile", "", "The bundle's Dockerfile (default <root>/bundle.Dockerfile); skipped when absent.")
	if err := fset.Parse(argv); err != nil {
		return err
	}
	platform, err := rf.parsedPlatform()
	if err != nil {
		return err
	}
	spec, err := rf.spec()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var all []finding
	found, err := lintOperator(ctx, rf.root, rf.dockerfilePath(), spec, platform, stdout)
	if err != nil {
		return err
	}
	all = append(all, found...)
	bundlePath := *bundle
	if bundlePath == "" {
		bundlePath = filepath.Join(rf.root, "bundle.Dockerfile")
	}
	found, err = lintBundle(ctx, rf.root, bundlePath, platform, stdout)
	if err != nil {
		return err
	}
	all = append(all, found...)
	found, err = lintNodeImages(ctx, rf.root, filepath.Join(rf.root, nodeDockerfile), platform, stdout)
	if err != nil {
		return err
	}
	all = append(all, found...)
	for _, f := range all {
		_, _ = fmt.Fprintln(stdout, f)
	}
	if len(all) > 0 {
		return &failedError{what: fmt.Sprintf("imagecheck lint: %d problem(s)", len(all))}
	}
	return nil
}

// lintOperator runs BuildKit's checks and the operator rules on the
// operator's Dockerfile.
func lintOperator(ctx context.Context, root, path string, spec operatorSpec, platform ocispecs.Platform, out io.Writer) ([]finding, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	name := displayName(root, path)
	found, err := buildkitLint(ctx, name, data, platform)
	if err != nil {
		return nil, err
	}
	df, err := parseDockerfile(name, data)
	if err != nil {
		return nil, err
	}
	bctx, err := openContext(root, path)
	if err != nil {
		return nil, err
	}
	rules, err := checkOperator(df, bctx, spec)
	if err != nil {
		return nil, err
	}
	found = append(found, rules...)
	if len(found) == 0 {
		_, _ = fmt.Fprintf(out, "%s: ok (%d stages; BuildKit checks, operator image rules)%s\n", name, len(df.stages), skipNote(data))
	}
	return found, nil
}

// nodeDockerfile builds the images a local cluster's node runs itself,
// relative to the repository's root.
const nodeDockerfile = "hack/images/node.Dockerfile"

// lintNodeImages runs BuildKit's checks on the node images' Dockerfile:
// stages on scratch with binaries built from source, no image rules apply.
func lintNodeImages(ctx context.Context, root, path string, platform ocispecs.Platform, out io.Writer) ([]finding, error) {
	name, data, found, err := lintIfPresent(ctx, root, path, "", platform, out)
	if err != nil || data == nil {
		return nil, err
	}
	if len(found) == 0 {
		_, _ = fmt.Fprintf(out, "%s: ok (BuildKit checks)\n", name)
	}
	return found, nil
}

// lintIfPresent reads the Dockerfile at path and runs BuildKit's checks on
// it. An absent one is skipped, as out says, with why appended: its data
// is then nil.
func lintIfPresent(ctx context.Context, root, path, why string, platform ocispecs.Platform, out io.Writer) (string, []byte, []finding, error) {
	name := displayName(root, path)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		_, _ = fmt.Fprintf(out, "%s: not present, skipped%s\n", name, why)
		return name, nil, nil, nil
	}
	if err != nil {
		return name, nil, nil, err
	}
	found, err := buildkitLint(ctx, name, data, platform)
	return name, data, found, err
}

// lintBundle runs BuildKit's checks and the bundle rules on the bundle's
// Dockerfile, when there is one.
func lintBundle(ctx context.Context, root, path string, platform ocispecs.Platform, out io.Writer) ([]finding, error) {
	name, data, found, err := lintIfPresent(ctx, root, path, " (make bundle generates it)", platform, out)
	if err != nil || data == nil {
		return nil, err
	}
	df, err := parseDockerfile(name, data)
	if err != nil {
		return nil, err
	}
	bctx, err := openContext(root, path)
	if err != nil {
		return nil, err
	}
	rules, err := checkBundle(df, bctx)
	if err != nil {
		return nil, err
	}
	found = append(found, rules...)
	if len(found) == 0 {
		_, _ = fmt.Fprintf(out, "%s: ok (BuildKit checks, bundle rules)%s\n", name, skipNote(data))
	}
	return found, nil
}

func skipNote(data []byte) string {
	if v := skippedChecks(data); v != "" {
		return fmt.Sprintf("; its # check=%s directive applies", v)
	}
	return ""
}

func displayName(root, p string) string {
	if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}
