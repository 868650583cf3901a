package upgradechart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// The copy loads as a chart of the versions asked for, renders the
// annotation into the pod template only when asked, and the watches file
// points at it.
func TestWrite(t *testing.T) {
	root, err := reporoot.Find()
	if err != nil {
		t.Fatal(err)
	}
	for _, change := range []bool{false, true} {
		dir := t.TempDir()
		watches, err := Write(root, dir, Options{AppVersion: "9.9.9", Version: "9.9.10", ChangeTemplate: change})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(watches)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "chart: "+filepath.Join(dir, "echo")+"\n") {
			t.Errorf("watches file does not point at the copy:\n%s", raw)
		}
		ch, err := loader.Load(filepath.Join(dir, "echo"))
		if err != nil {
			t.Fatal(err)
		}
		if ch.Metadata.AppVersion != "9.9.9" || ch.Metadata.Version != "9.9.10" {
			t.Errorf("versions %s/%s, want 9.9.9/9.9.10", ch.Metadata.AppVersion, ch.Metadata.Version)
		}
		vals, err := chartutil.ToRenderValues(ch, map[string]any{}, chartutil.ReleaseOptions{Name: "web", Namespace: "ns"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := engine.Render(ch, vals)
		if err != nil {
			t.Fatal(err)
		}
		want := ChangedAnnotation + `: "9.9.10"`
		if got := strings.Contains(out["echo/templates/deployment.yaml"], want); got != change {
			t.Errorf("ChangeTemplate %v: the Deployment has %s: %v\n%s", change, want, got, out["echo/templates/deployment.yaml"])
		}
	}
}
