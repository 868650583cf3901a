package olmbundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// Previous copies the bundle directory bundleDir (manifests/, metadata/,
// tests/) to dest, with its CSV renamed <pkg>.v<version> at that version
// and without upgrade edges of its own (spec.replaces, spec.skips,
// olm.skipRange): the same manifests as an earlier release, from which
// bundleDir's CSV can upgrade.
func Previous(bundleDir, dest, pkg, version string) error {
	if err := os.CopyFS(dest, os.DirFS(bundleDir)); err != nil {
		return err
	}
	manifests, err := filepath.Glob(filepath.Join(dest, "manifests", "*"))
	if err != nil {
		return err
	}
	for _, path := range manifests {
		done, err := renameCSV(path, pkg, version)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if done {
			return nil
		}
	}
	return errors.New(bundleDir + "/manifests has no ClusterServiceVersion")
}

// renameCSV rewrites the manifest at path when it is the CSV, and says
// whether it was.
func renameCSV(path, pkg, version string) (bool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	js, err := yaml.ToJSON(raw)
	if err != nil {
		return false, err
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(js); err != nil {
		return false, err
	}
	if obj.GetKind() != "ClusterServiceVersion" {
		return false, nil
	}
	obj.SetName(pkg + ".v" + version)
	annotations := obj.GetAnnotations()
	delete(annotations, "olm.skipRange")
	obj.SetAnnotations(annotations)
	if err := unstructured.SetNestedField(obj.Object, version, "spec", "version"); err != nil {
		return false, err
	}
	unstructured.RemoveNestedField(obj.Object, "spec", "replaces")
	unstructured.RemoveNestedField(obj.Object, "spec", "skips")
	out, err := json.Marshal(obj.Object) // JSON is YAML
	if err != nil {
		return false, err
	}
	return true, os.WriteFile(path, out, 0o600)
}
