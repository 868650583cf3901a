package olmnode

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/imagebuild"
	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

// olmv1Namespace is where OLM v1's release runs its managers.
const olmv1Namespace = "olmv1-system"

// olmv1Managers are OLM v1's Deployments, each of one manager.
var olmv1Managers = []string{"catalogd-controller-manager", "operator-controller-controller-manager"}

// installOLMv1 installs OLM v1 from its release's manifest, as its install
// script applies it, with what cert-manager would do done here instead:
// the release's Issuers and Certificates are left out, and the test's own
// CA issues the two Secrets they would have made and is the CA of
// catalogd's webhook. Both managers pull the catalog and bundle images
// themselves, from the quay.io names the catalog gives them: a
// registries.conf in each of their pods redirects quay.io to the
// registry's HTTPS front, whose CA the Secrets carry too. The managers'
// own images come from the node's mirror of quay.io.
func installOLMv1(t *testing.T) {
	t.Helper()
	sources, err := imagebuild.LocateOLMv1Sources()
	must(t, err)
	manifest, err := olmv1Manifest(sources)
	must(t, err)
	file := filepath.Join(workDir, "olmv1.yaml")
	must(t, os.WriteFile(file, manifest, 0o644))
	run(t, "create", "-f", file)
	for _, d := range olmv1Managers {
		run(t, "rollout", "status", "-n", olmv1Namespace, "deployment/"+d, "--timeout=5m")
	}
}

// olmv1Manifest is the release's manifest, edited as installOLMv1 says,
// with the Secrets and the ConfigMap of registries.conf after its
// namespace.
func olmv1Manifest(s imagebuild.OLMv1Sources) ([]byte, error) {
	raw, err := os.ReadFile(s.Manifest())
	if err != nil {
		return nil, err
	}
	docs, err := splitObjects(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Manifest(), err)
	}
	ca, err := testcerts.NewCA("echo-operator test OLM v1 CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	frontCA, err := os.ReadFile(front.CAFile)
	if err != nil {
		return nil, err
	}
	// The managers trust these CAs for catalogd's server and the
	// registries alike.
	trusted := append(append([]byte{}, ca.CertPEM()...), frontCA...)
	extra, err := olmv1Secrets(ca, trusted, s.Version())
	if err != nil {
		return nil, err
	}
	extra = append(extra, registriesConf())

	var out []map[string]any
	seen := map[string]bool{}
	for _, obj := range docs {
		u := &unstructured.Unstructured{Object: obj}
		if strings.HasPrefix(u.GetAPIVersion(), "cert-manager.io/") {
			continue
		}
		switch u.GetKind() {
		case "Deployment":
			if err := useRegistriesConf(u); err != nil {
				return nil, err
			}
			seen[u.GetName()+" "+containerImage(u)] = true
		case "MutatingWebhookConfiguration":
			if err := injectCA(u, ca.CertPEM()); err != nil {
				return nil, err
			}
		}
		out = append(out, u.Object)
		if u.GetKind() == "Namespace" {
			out = append(out, extra...)
		}
	}
	for _, want := range []string{"catalogd-controller-manager " + images.Catalogd,
		"operator-controller-controller-manager " + images.OperatorController} {
		if !seen[want] {
			return nil, fmt.Errorf("%s has no Deployment %s: it names other images than those built here", s.Manifest(), want)
		}
	}
	var buf bytes.Buffer
	for _, obj := range out {
		y, err := sigsyaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		buf.WriteString("---\n")
		buf.Write(y)
	}
	return buf.Bytes(), nil
}

// olmv1Secrets are the Secrets of the release's Certificates, as
// cert-manager issues them (kubernetes.io/tls with ca.crt), for the
// Services of catalogd and operator-controller; ca.crt holds every CA the
// managers trust.
func olmv1Secrets(ca *testcerts.CA, trusted []byte, version string) ([]map[string]any, error) {
	secrets := []struct{ name, service string }{
		{"catalogd-service-cert-" + version, "catalogd-service"},
		{"olmv1-cert", "operator-controller-service"},
	}
	var out []map[string]any
	for _, s := range secrets {
		svc := s.service + "." + olmv1Namespace + ".svc"
		certPEM, keyPEM, err := ca.Sign(testcerts.Leaf{CommonName: svc, DNSNames: []string{"localhost", svc, svc + ".cluster.local"}})
		if err != nil {
			return nil, err
		}
		out = append(out, map[string]any{
			"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
			"metadata": map[string]any{"name": s.name, "namespace": olmv1Namespace},
			"data":     map[string]any{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": trusted},
		})
	}
	return out, nil
}

// registriesConfMap is the ConfigMap of registries.conf.
const registriesConfMap = "olmv1-registries"

// registriesConf is the ConfigMap of a registries.conf that sends what
// names quay.io to the registry's HTTPS front.
func registriesConf() map[string]any {
	conf := fmt.Sprintf("[[registry]]\nprefix = \"quay.io\"\nlocation = %q\n", front.Host)
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": registriesConfMap, "namespace": olmv1Namespace},
		"data":     map[string]any{"registries.conf": conf},
	}
}

// useRegistriesConf mounts the ConfigMap of registries.conf on
// /etc/containers of the Deployment's manager, where containers/image
// reads it.
func useRegistriesConf(d *unstructured.Unstructured) error {
	spec := []string{"spec", "template", "spec"}
	volumes, _, _ := unstructured.NestedSlice(d.Object, append(spec, "volumes")...)
	volumes = append(volumes, map[string]any{"name": "registries", "configMap": map[string]any{"name": registriesConfMap}})
	if err := unstructured.SetNestedSlice(d.Object, volumes, append(spec, "volumes")...); err != nil {
		return err
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, append(spec, "containers")...)
	for _, c := range containers {
		c := c.(map[string]any)
		if c["name"] != "manager" {
			continue
		}
		mounts, _ := c["volumeMounts"].([]any)
		c["volumeMounts"] = append(mounts, map[string]any{"name": "registries", "mountPath": "/etc/containers", "readOnly": true})
		return unstructured.SetNestedSlice(d.Object, containers, append(spec, "containers")...)
	}
	return fmt.Errorf("deployment %s has no container manager", d.GetName())
}

// containerImage is the image of the Deployment's first container.
func containerImage(d *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return ""
	}
	image, _ := containers[0].(map[string]any)["image"].(string)
	return image
}

// injectCA does what cert-manager's CA injector does for the webhook
// configuration: caBundle, in place of the annotation that asks for it.
func injectCA(w *unstructured.Unstructured, caPEM []byte) error {
	annotations := w.GetAnnotations()
	if _, ok := annotations["cert-manager.io/inject-ca-from-secret"]; !ok {
		return fmt.Errorf("%s no longer asks cert-manager for its CA: check what else changed", w.GetName())
	}
	delete(annotations, "cert-manager.io/inject-ca-from-secret")
	w.SetAnnotations(annotations)
	hooks, _, _ := unstructured.NestedSlice(w.Object, "webhooks")
	for _, h := range hooks {
		if err := unstructured.SetNestedField(h.(map[string]any), base64.StdEncoding.EncodeToString(caPEM), "clientConfig", "caBundle"); err != nil {
			return err
		}
	}
	return unstructured.SetNestedSlice(w.Object, hooks, "webhooks")
}

// splitObjects parses the YAML documents of a manifest.
func splitObjects(raw []byte) ([]map[string]any, error) {
	var out []map[string]any
	for _, doc := range strings.Split("\n"+string(raw), "\n---\n") {
		obj := map[string]any{}
		if err := sigsyaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if len(obj) > 0 {
			out = append(out, obj)
		}
	}
	return out, nil
}

// explainOLMv1OnFailure prints, when the test fails, the state of OLM v1's
// pods and its managers' logs, its objects, and the pods of namespaces.
func explainOLMv1OnFailure(t *testing.T, namespaces ...string) {
	t.Helper()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, d := range olmv1Managers {
			out, _ := kubectl.Run("logs", "-n", olmv1Namespace, "deployment/"+d, "--tail=80")
			t.Logf("logs of %s:\n%s", d, out)
		}
		out, _ := kubectl.Run("get", "clustercatalogs,clusterextensions", "-o", "yaml")
		t.Logf("OLM v1's objects:\n%s", out)
	})
	explainOnFailure(t, append(namespaces, olmv1Namespace)...)
}
