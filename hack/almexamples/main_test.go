package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestRunAddsAndReplacesExamples(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "csv.yaml")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("csv.yaml", `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  annotations:
    alm-examples: '[{"apiVersion":"echo.dev/v1alpha1","kind":"Echo","metadata":{"name":"a"}},{"apiVersion":"live.echo.dev/v1alpha1","kind":"EchoRevision","metadata":{"name":"old"}}]'
  name: echo-operator.v0.1.0
`)
	rev := write("rev.yaml", "apiVersion: live.echo.dev/v1alpha1\nkind: EchoRevision\nmetadata:\n  name: new.v2\n")
	sb := write("sb.yaml", "apiVersion: live.echo.dev/v1alpha1\nkind: StoredBackup\nmetadata:\n  name: loc.ns.web.b\n")
	for range 2 { // running again changes nothing
		if err := run(csv, []string{rev, sb}); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	var examples []struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(got.Metadata.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatal(err)
	}
	want := []string{"Echo/a", "EchoRevision/new.v2", "StoredBackup/loc.ns.web.b"}
	if len(examples) != len(want) {
		t.Fatalf("examples = %+v; want %v", examples, want)
	}
	for i, e := range examples {
		if e.Kind+"/"+e.Metadata.Name != want[i] {
			t.Errorf("example %d = %s/%s; want %s", i, e.Kind, e.Metadata.Name, want[i])
		}
	}
}
