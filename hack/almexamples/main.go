// Command almexamples adds examples of the kinds a CSV provides through
// its apiservicedefinitions to the CSV's alm-examples annotation, which
// `operator-sdk generate bundle` fills from the examples of owned CRDs
// only:
//
//	go run ./hack/almexamples CSV EXAMPLE.yaml...
//
// The CSV is rewritten in place; an example already there (same apiVersion
// and kind) is replaced.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

const annotation = "alm-examples"

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: almexamples CSV EXAMPLE.yaml...")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintln(os.Stderr, "almexamples:", err)
		os.Exit(1)
	}
}

func run(csvPath string, examplePaths []string) error {
	raw, err := os.ReadFile(csvPath)
	if err != nil {
		return err
	}
	var csv map[string]any
	if err := yaml.Unmarshal(raw, &csv); err != nil {
		return fmt.Errorf("%s: %w", csvPath, err)
	}
	meta, _ := csv["metadata"].(map[string]any)
	annotations, _ := meta["annotations"].(map[string]any)
	if annotations == nil {
		return fmt.Errorf("%s has no annotations", csvPath)
	}
	var examples []map[string]any
	if s, _ := annotations[annotation].(string); s != "" {
		if err := json.Unmarshal([]byte(s), &examples); err != nil {
			return fmt.Errorf("%s: %s: %w", csvPath, annotation, err)
		}
	}
	for _, p := range examplePaths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var example map[string]any
		if err := yaml.Unmarshal(b, &example); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		examples = replaceOrAppend(examples, example)
	}
	out, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return err
	}
	annotations[annotation] = string(out)
	raw, err = yaml.Marshal(csv)
	if err != nil {
		return err
	}
	return os.WriteFile(csvPath, raw, 0o644) //nolint:gosec // a manifest, readable by all
}

// replaceOrAppend puts example in place of one of the same apiVersion and
// kind, or at the end.
func replaceOrAppend(examples []map[string]any, example map[string]any) []map[string]any {
	for i, e := range examples {
		if e["apiVersion"] == example["apiVersion"] && e["kind"] == example["kind"] {
			examples[i] = example
			return examples
		}
	}
	return append(examples, example)
}
