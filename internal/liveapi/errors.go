package liveapi

import "fmt"

func fieldSelectorError(label string) error {
	return fmt.Errorf("field label %q is not supported: use %s, metadata.name or metadata.namespace", label, echoField)
}
