package realnode

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// TestServicesManifestDecodes renders the cluster's services and decodes
// every object, and checks what the node relies on: the DNS Service's
// address, a Corefile that forwards nothing, restricted-compatible
// Deployments on the real node, and the default StorageClass's directory
// under the node's root.
func TestServicesManifestDecodes(t *testing.T) {
	n := &Node{opts: Options{Root: "/tmp/some-node"}}
	manifest, err := n.renderServices()
	if err != nil {
		t.Fatal(err)
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(manifest)))
	kinds := map[string]int{}
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if onlyComments(doc) {
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("decoding %s: %v", doc, err)
		}
		kinds[gvk.Kind]++
		checkServiceObject(t, obj)
	}
	for kind, want := range map[string]int{"Deployment": 2, "Service": 1, "StorageClass": 1, "ConfigMap": 2, "Namespace": 1} {
		if kinds[kind] != want {
			t.Errorf("%d objects of kind %s, want %d (all: %v)", kinds[kind], kind, want, kinds)
		}
	}
}

// checkServiceObject checks what the node relies on in one object.
func checkServiceObject(t *testing.T, obj runtime.Object) {
	t.Helper()
	switch o := obj.(type) {
	case *corev1.Service:
		if o.Spec.ClusterIP != ClusterDNSIP || o.Spec.Ports[0].Port != 53 {
			t.Errorf("the DNS Service: %+v", o.Spec)
		}
	case *corev1.ConfigMap:
		checkServiceConfigMap(t, o)
	case *appsv1.Deployment:
		spec := o.Spec.Template.Spec
		sc := spec.Containers[0].SecurityContext
		if spec.NodeSelector["kubernetes.io/hostname"] != NodeName || spec.SecurityContext.RunAsNonRoot == nil ||
			!*spec.SecurityContext.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("the Deployment %s is not restricted, or not on the real node: %+v", o.Name, spec)
		}
	case *storagev1.StorageClass:
		if o.Name != StorageClass || o.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" ||
			o.VolumeBindingMode == nil || *o.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			t.Errorf("the StorageClass: %+v", o)
		}
	}
}

func checkServiceConfigMap(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	if corefile, ok := cm.Data["Corefile"]; ok && strings.Contains(corefile, "forward") {
		t.Errorf("the Corefile forwards:\n%s", corefile)
	}
	if cfg, ok := cm.Data["config.json"]; ok && !strings.Contains(cfg, `"/tmp/some-node/local-path"`) {
		t.Errorf("the provisioner's directory is not under the node's root: %s", cfg)
	}
}
