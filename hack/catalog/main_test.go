package main

import (
	"archive/tar"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

const goodTemplate = `schema: olm.template.basic
entries:
- schema: olm.package
  name: echo-operator
  defaultChannel: alpha
  icon: {mediatype: image/svg+xml, base64data: PHN2Zz4=}
- schema: olm.channel
  package: echo-operator
  name: alpha
  entries:
  - {name: echo-operator.v0.1.0, skipRange: <0.1.0}
  - {name: echo-operator.v0.2.0, replaces: echo-operator.v0.1.0, skips: [echo-operator.v0.1.1], skipRange: <0.2.0}
- schema: olm.channel
  package: echo-operator
  name: beta
  entries:
  - {name: echo-operator.v0.2.0, replaces: echo-operator.v0.1.0, skips: [echo-operator.v0.1.1], skipRange: <0.2.0}
- {schema: olm.bundle, image: quay.io/echo/bundle:v0.1.0}
- {schema: olm.bundle, image: quay.io/echo/bundle:v0.2.0}
`

func TestCheckTemplate(t *testing.T) {
	b := bundle{
		annotations: map[string]string{channelsAnnotation: "alpha, beta", defaultChannelAnnotation: "alpha"},
		csv: entry{Name: "echo-operator.v0.2.0", Replaces: "echo-operator.v0.1.0",
			Skips: []string{"echo-operator.v0.1.1"}, SkipRange: "<0.2.0"},
		icon: json.RawMessage(`{"base64data":"PHN2Zz4=","mediatype":"image/svg+xml"}`),
	}
	for _, tc := range []struct {
		name, old, new, err string
	}{
		{name: "agrees"},
		{name: "another schema", old: "olm.template.basic", new: "olm.semver", err: "want olm.template.basic"},
		{name: "default channel", old: "defaultChannel: alpha", new: "defaultChannel: beta",
			err: "the default channel is beta, the bundle's alpha"},
		{name: "icon", old: "PHN2Zz4=", new: "PHN2Zz8=", err: "icon is not the CSV's"},
		{name: "edges", old: "replaces: echo-operator.v0.1.0, skips: [echo-operator.v0.1.1], skipRange: <0.2.0}\n- {schema",
			new: "skipRange: <0.2.0}\n- {schema", err: "channel beta: "},
		{name: "no image of the bundle", old: "bundle:v0.2.0", new: "bundle:v0.2.1",
			err: "no olm.bundle entry has the image quay.io/echo/bundle:v0.2.0"},
		{name: "channels", old: "name: beta", new: "name: gamma",
			err: "echo-operator.v0.2.0 is in the channels [alpha gamma], the bundle in [alpha beta]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var tmpl template
			g.Expect(yaml.Unmarshal([]byte(strings.Replace(goodTemplate, tc.old, tc.new, 1)), &tmpl)).To(Succeed())
			err := checkTemplate(tmpl, b, "quay.io/echo/bundle:v0.2.0")
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
			}
		})
	}
}

func TestCheckImages(t *testing.T) {
	g := NewWithT(t)
	var tmpl template
	g.Expect(yaml.Unmarshal([]byte(goodTemplate), &tmpl)).To(Succeed())
	g.Expect(checkImages(tmpl, splitImages(" quay.io/echo/bundle:v0.1.0, quay.io/echo/bundle:v0.2.0,"))).To(Succeed())
	g.Expect(checkImages(tmpl, nil)).To(Succeed())
	err := checkImages(tmpl, splitImages("quay.io/echo/bundle:v0.2.0,quay.io/echo/bundle:v0.3.0,quay.io/echo/other:v0.1.0"))
	g.Expect(err).To(MatchError(And(
		ContainSubstring("no olm.bundle entry has the image quay.io/echo/bundle:v0.3.0"),
		ContainSubstring("no olm.bundle entry has the image quay.io/echo/other:v0.1.0"),
		Not(ContainSubstring("v0.2.0")))))
}

// writeBundle writes a bundle directory with a CRD and a CSV.
func writeBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"metadata/annotations.yaml": "annotations:\n  " + channelsAnnotation + ": alpha\n  operators.operatorframework.io.bundle.package.v1: echo-operator\n",
		"manifests/crd.yaml":        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: echoes.echo.dev\n",
		"manifests/csv.yaml": `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: echo-operator.v0.2.0
  annotations:
    olm.skipRange: '<0.2.0'
spec:
  replaces: echo-operator.v0.1.0
  icon:
  - {base64data: PHN2Zz4=, mediatype: image/svg+xml}
`,
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadBundle(t *testing.T) {
	RegisterTestingT(t)
	dir := writeBundle(t)
	b, err := readBundle(dir)
	Expect(err).NotTo(HaveOccurred())
	Expect(b.csv).To(Equal(entry{Name: "echo-operator.v0.2.0", Replaces: "echo-operator.v0.1.0", SkipRange: "<0.2.0"}))
	Expect(b.annotations).To(HaveKeyWithValue(channelsAnnotation, "alpha"))
	Expect(jsonEqual(b.icon, json.RawMessage(`{"mediatype":"image/svg+xml","base64data":"PHN2Zz4="}`))).To(BeTrue())

	Expect(os.Remove(filepath.Join(dir, "manifests", "csv.yaml"))).To(Succeed())
	_, err = readBundle(dir)
	Expect(err).To(MatchError(ContainSubstring("holds no ClusterServiceVersion")))
}

func get(g Gomega, c *http.Client, method, url string) (*http.Response, []byte) {
	req, err := http.NewRequest(method, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := c.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return resp, body
}

// TestRegistry pulls the packed bundle from the registry as a client of
// the registry API does: the manifest by tag, then its config and layer.
func TestRegistry(t *testing.T) {
	RegisterTestingT(t)
	dir := writeBundle(t)
	labels := map[string]string{"operators.operatorframework.io.bundle.package.v1": "echo-operator"}
	img, err := packBundle(dir, labels)
	Expect(err).NotTo(HaveOccurred())
	reg := &registry{repo: "echo/bundle", tag: "v0.2.0", img: img}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	c := srv.Client()

	resp, _ := get(Default, c, http.MethodGet, srv.URL+"/v2/")
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	Expect(reg.pulled.Load()).To(BeFalse())
	resp, body := get(Default, c, http.MethodHead, srv.URL+"/v2/echo/bundle/manifests/v0.2.0")
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	Expect(body).To(BeEmpty())
	Expect(resp.Header.Get("Docker-Content-Digest")).To(Equal(digestOf(img.manifest)))
	resp, body = get(Default, c, http.MethodGet, srv.URL+"/v2/echo/bundle/manifests/"+digestOf(img.manifest))
	Expect(resp.Header.Get("Content-Type")).To(Equal(mediaTypeManifest))
	Expect(reg.pulled.Load()).To(BeTrue())

	var manifest struct {
		Config struct{ Digest string }   `json:"config"`
		Layers []struct{ Digest string } `json:"layers"`
	}
	Expect(json.Unmarshal(body, &manifest)).To(Succeed())
	Expect(manifest.Layers).To(HaveLen(1))
	blob := func(digest string) []byte {
		resp, body := get(Default, c, http.MethodGet, srv.URL+"/v2/echo/bundle/blobs/"+digest)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(digestOf(body)).To(Equal(digest))
		return body
	}
	var config struct {
		Config struct{ Labels map[string]string } `json:"config"`
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	Expect(json.Unmarshal(blob(manifest.Config.Digest), &config)).To(Succeed())
	Expect(config.Config.Labels).To(Equal(labels))
	Expect(config.RootFS.DiffIDs).To(Equal([]string{manifest.Layers[0].Digest}))

	files := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(blob(manifest.Layers[0].Digest)))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		Expect(err).NotTo(HaveOccurred())
		data, err := io.ReadAll(tr)
		Expect(err).NotTo(HaveOccurred())
		files[h.Name] = string(data)
	}
	Expect(files).To(HaveKey("manifests/"))
	Expect(files).To(HaveKey("metadata/"))
	Expect(files).To(HaveKeyWithValue("manifests/crd.yaml", ContainSubstring("echoes.echo.dev")))
	Expect(files).To(HaveKeyWithValue("metadata/annotations.yaml", ContainSubstring("echo-operator")))

	for _, path := range []string{"/v2/echo/bundle/manifests/v0.1.0", "/v2/echo/other/manifests/v0.2.0", "/v2/echo/bundle/blobs/sha256:00"} {
		resp, _ := get(Default, c, http.MethodGet, srv.URL+path)
		Expect(resp.StatusCode).To(Equal(http.StatusNotFound), path)
	}
	resp, _ = get(Default, c, http.MethodPut, srv.URL+"/v2/echo/bundle/manifests/v0.2.0")
	Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed))
}

// TestServe reaches the registry as opm does: at the mirror location of
// the registries.conf, over TLS, trusting the CAs of SSL_CERT_DIR.
func TestServe(t *testing.T) {
	RegisterTestingT(t)
	img, err := packBundle(writeBundle(t), nil)
	Expect(err).NotTo(HaveOccurred())
	reg, env, stop, err := serve("quay.io/echo/bundle:v0.2.0", img)
	Expect(err).NotTo(HaveOccurred())
	defer stop()

	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	Expect(vars).To(HaveKeyWithValue("CONTAINERS_POLICY_JSON", Not(BeEmpty())))
	conf, err := os.ReadFile(vars["CONTAINERS_REGISTRIES_CONF"])
	Expect(err).NotTo(HaveOccurred())
	Expect(string(conf)).To(HavePrefix("[[registry]]\nprefix = \"quay.io/echo/bundle\"\nlocation = \"quay.io/echo/bundle\"\n"))
	m := regexp.MustCompile(`\[\[registry.mirror]]\nlocation = "(127\.0\.0\.1:\d+)/echo/bundle"\n`).FindStringSubmatch(string(conf))
	Expect(m).NotTo(BeNil(), string(conf))

	certDir, _, _ := strings.Cut(vars["SSL_CERT_DIR"], ":")
	pem, err := os.ReadFile(filepath.Join(certDir, "ca.pem"))
	Expect(err).NotTo(HaveOccurred())
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(pem)).To(BeTrue())
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	resp, _ := get(Default, c, http.MethodGet, "https://"+m[1]+"/v2/echo/bundle/manifests/v0.2.0")
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	Expect(reg.pulled.Load()).To(BeTrue())

	stop()
	_, err = os.Stat(certDir)
	Expect(os.IsNotExist(err)).To(BeTrue(), "stop removes the configuration")

	for _, image := range []string{"bundle:v1", "echo/bundle:v1", "quay.io/echo/bundle", "localhost:5000/bundle",
		"quay.io/echo/bundle@sha256:0123", "quay.io:v1"} {
		_, _, _, err := serve(image, img)
		Expect(err).To(MatchError(ContainSubstring("want registry/repository:tag")), image)
	}
}
