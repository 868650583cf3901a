package simcluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildScript is the script, relative to the repository root, that builds the
// control-plane binaries and prints where they live.
const buildScript = "hack/build-control-plane.sh"

// Binaries holds the paths of the programs a simulated cluster runs.
type Binaries struct {
	APIServer         string
	Etcd              string
	ControllerManager string
	Scheduler         string
	Kwok              string
	// KwokStagesDir is a copy of the kwok module's kustomize/stage directory.
	KwokStagesDir string
	Kubectl       string
}

// binaryEnv maps the environment variables (which are also the keys printed
// by `hack/build-control-plane.sh paths`) to the field each one sets.
func (b *Binaries) binaryEnv() []struct {
	env   string
	field *string
	dir   bool
} {
	return []struct {
		env   string
		field *string
		dir   bool
	}{
		{"KUBE_APISERVER", &b.APIServer, false},
		{"ETCD", &b.Etcd, false},
		{"KUBE_CONTROLLER_MANAGER", &b.ControllerManager, false},
		{"KUBE_SCHEDULER", &b.Scheduler, false},
		{"KWOK", &b.Kwok, false},
		{"KWOK_STAGES", &b.KwokStagesDir, true},
		{"KUBECTL", &b.Kubectl, false},
	}
}

// LocateBinaries finds the control-plane binaries. Each environment variable
// KUBE_APISERVER, ETCD, KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER, KWOK,
// KWOK_STAGES and KUBECTL overrides one path; the rest come from
// `hack/build-control-plane.sh paths` run in repoRoot. An empty repoRoot
// means the nearest directory at or above the working directory that holds
// that script. Every path is checked to exist.
func LocateBinaries(repoRoot string) (Binaries, error) {
	var b Binaries
	missing := false
	for _, e := range b.binaryEnv() {
		*e.field = os.Getenv(e.env)
		if *e.field == "" {
			missing = true
		}
	}
	if missing {
		paths, err := scriptPaths(repoRoot)
		if err != nil {
			return b, err
		}
		for _, e := range b.binaryEnv() {
			if *e.field == "" {
				*e.field = paths[e.env]
			}
		}
	}
	return b, b.Validate()
}

// Validate checks that every binary is an executable file and that the stages
// directory exists.
func (b Binaries) Validate() error {
	var errs []error
	for _, e := range b.binaryEnv() {
		p := *e.field
		if p == "" {
			errs = append(errs, fmt.Errorf("%s: no path set; run `make control-plane` (or set %s)", e.env, e.env))
			continue
		}
		st, err := os.Stat(p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %s does not exist; run `make control-plane` (or set %s)", e.env, p, e.env))
		case e.dir && !st.IsDir():
			errs = append(errs, fmt.Errorf("%s: %s is not a directory; run `make control-plane` (or set %s)", e.env, p, e.env))
		case !e.dir && (st.IsDir() || st.Mode().Perm()&0o111 == 0):
			errs = append(errs, fmt.Errorf("%s: %s is not an executable file; run `make control-plane` (or set %s)", e.env, p, e.env))
		}
	}
	return errors.Join(errs...)
}

// scriptPaths runs the build script's `paths` command and parses its
// NAME=path lines.
func scriptPaths(repoRoot string) (map[string]string, error) {
	if repoRoot == "" {
		var err error
		if repoRoot, err = findRepoRoot(); err != nil {
			return nil, err
		}
	}
	script := filepath.Join(repoRoot, buildScript)
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("locating control-plane binaries: %w", err)
	}
	cmd := exec.Command("bash", script, "paths")
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s paths: %w: %s", buildScript, err, strings.TrimSpace(stderr.String()))
	}
	paths := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			paths[k] = v
		}
	}
	return paths, sc.Err()
}

// findRepoRoot walks up from the working directory to the first directory
// holding the build script.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, buildScript)); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s found at or above the working directory", buildScript)
		}
		dir = parent
	}
}
