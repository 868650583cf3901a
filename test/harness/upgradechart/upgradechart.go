package upgradechart

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ChangedAnnotation is the pod template annotation that Options.ChangeTemplate
// adds to every Echo's Deployment; its value is the chart's version.
const ChangedAnnotation = "upgrade.test.echo.dev/chart-version"

// Options say how the copy differs from helm-charts/echo.
type Options struct {
	// AppVersion is the copy's appVersion, the operator version it ships
	// with (`make verify-version` keeps them equal).
	AppVersion string
	// Version, when set, is the copy's chart version.
	Version string
	// ChangeTemplate adds ChangedAnnotation to the Deployment's pod
	// template: every Echo's pods roll.
	ChangeTemplate bool
}

// chartDir is the echo chart in the repository, and the path watches.yaml
// names it by.
const chartDir = "helm-charts/echo"

// Write copies the echo chart of the repository at root into dir/echo as
// o says, and writes dir/watches.yaml, the repository's watches file with
// the chart's path replaced by the copy's. It returns the watches file's
// path.
func Write(root, dir string, o Options) (string, error) {
	dst := filepath.Join(dir, "echo")
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(root, chartDir))); err != nil {
		return "", fmt.Errorf("copying the echo chart: %w", err)
	}
	if err := editFile(filepath.Join(dst, "Chart.yaml"), func(s string) (string, error) { return versioned(s, o) }); err != nil {
		return "", err
	}
	if o.ChangeTemplate {
		if err := editFile(filepath.Join(dst, "templates", "deployment.yaml"), annotated); err != nil {
			return "", err
		}
	}
	watches := filepath.Join(dir, "watches.yaml")
	raw, err := os.ReadFile(filepath.Join(root, "watches.yaml"))
	if err != nil {
		return "", fmt.Errorf("reading watches.yaml: %w", err)
	}
	entry := "chart: " + chartDir + "\n"
	if strings.Count(string(raw), entry) != 1 {
		return "", fmt.Errorf("watches.yaml has no single %q", strings.TrimSpace(entry))
	}
	out := strings.Replace(string(raw), entry, "chart: "+dst+"\n", 1)
	if err := os.WriteFile(watches, []byte(out), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", watches, err)
	}
	return watches, nil
}

// versioned sets the appVersion, and the version if given, of Chart.yaml.
func versioned(s string, o Options) (string, error) {
	set := map[string]string{"appVersion": fmt.Sprintf("%q", o.AppVersion)}
	if o.Version != "" {
		set["version"] = o.Version
	}
	for key, v := range set {
		re := regexp.MustCompile(`(?m)^` + key + `: .*$`)
		if len(re.FindAllString(s, -1)) != 1 {
			return "", fmt.Errorf("no single %s in Chart.yaml", key)
		}
		s = re.ReplaceAllLiteralString(s, key+": "+v)
	}
	return s, nil
}

// podAnnotations opens the pod template's annotations in deployment.yaml.
const podAnnotations = "\n      annotations:\n"

// annotated adds ChangedAnnotation to the pod template.
func annotated(s string) (string, error) {
	if strings.Count(s, podAnnotations) != 1 {
		return "", fmt.Errorf("deployment.yaml has no single pod template annotations block")
	}
	return strings.Replace(s, podAnnotations, podAnnotations+"        "+ChangedAnnotation+": {{ .Chart.Version | quote }}\n", 1), nil
}

func editFile(path string, edit func(string) (string, error)) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := edit(string(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
