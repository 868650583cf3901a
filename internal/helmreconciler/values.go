package helmreconciler

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
	"github.com/echo-operator/echo-operator/internal/chartvalues"
)

// EchoTranslator turns an Echo into the values of the echo chart.
type EchoTranslator struct {
	// DefaultImage is used when the Echo names no image (RELATED_IMAGE_ECHO).
	DefaultImage string
}

// Translate implements values.Translator.
func (t EchoTranslator) Translate(_ context.Context, u *unstructured.Unstructured) (chartutil.Values, error) {
	echo := &echov1alpha1.Echo{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, echo); err != nil {
		return nil, fmt.Errorf("decoding Echo %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	v := chartvalues.FromEcho(echo, t.DefaultImage)
	vals, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&v)
	if err != nil {
		return nil, fmt.Errorf("encoding chart values: %w", err)
	}
	dropResourceClaims(vals)
	return vals, nil
}

// dropResourceClaims keeps dynamic resource claims, which the echo server
// has no use for, away from the chart.
func dropResourceClaims(vals map[string]any) {
	if res, ok := vals["resources"].(map[string]any); ok {
		delete(res, "claims")
	}
}
