package v1alpha1_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

// Every sample in config/samples is accepted by the API server as it is.
func TestSamplesAreValid(t *testing.T) {
	RegisterTestingT(t)
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join(reporoot.Must(t), "config", "samples", "echo_*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(files).NotTo(BeEmpty())
	for _, f := range files {
		raw, err := os.ReadFile(f)
		Expect(err).NotTo(HaveOccurred())
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			u.SetNamespace(ns)
			Expect(k8sClient.Create(context.Background(), u, client.DryRunAll, client.FieldValidation("Strict"))).
				To(Succeed(), "%s: %s %s", f, u.GetKind(), u.GetName())
		}
	}
}
