//go:build linux

package olm

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/hack/catalog/fbc"
)

// previousVersion is the version of the bundle the upgrade test makes up to
// upgrade from.
const previousVersion = "0.0.9"

// testCatalog is a catalog the tests serve, and what they need to know of it.
type testCatalog struct {
	dir string
	// current is the CSV name of bundle/, previous that of the made-up
	// earlier bundle (empty without one).
	current, previous string
	// channels holds the published channels of the current bundle;
	// defaultChannel is the published package's.
	channels       []string
	defaultChannel string
}

// buildTestCatalog writes the catalog the tests serve, a variant of the
// published one (catalog/echo-operator, which `make catalog` renders from
// bundle/): the same package and, in each channel that holds the bundle of
// bundle/, its entry as published; that bundle alone, rendered again with
// an empty image and its manifests inline. OLM then installs from the
// catalog's data alone; with an image it would run a Job to unpack the
// bundle, and KWOK runs no container. (Earlier releases in the published
// catalog are left out: their manifests are only in their images.)
// With withPrevious, a bundle of version 0.0.9 made from the same manifests
// precedes it in those channels, and the current entry replaces it.
func buildTestCatalog(t *testing.T, withPrevious bool) testCatalog {
	t.Helper()
	ctx := context.Background()
	bundleDir := filepath.Join(repoRoot, "bundle")
	published, err := opm.Load(ctx, filepath.Join(repoRoot, "catalog", packageName))
	Expect(err).NotTo(HaveOccurred(), "loading the published catalog")
	inline, err := opm.RenderBundle(ctx, bundleDir, "", false)
	Expect(err).NotTo(HaveOccurred(), "rendering bundle/")
	Expect(inline.Image).To(BeEmpty())
	Expect(inline.Objects()).NotTo(BeEmpty())

	pub := published.Bundle(inline.Name)
	Expect(pub).NotTo(BeNil(), "the published catalog has no bundle %s: run `make catalog`", inline.Name)
	Expect(pub.Image).NotTo(BeEmpty(), "the published catalog names the bundle image")
	Expect(published.Packages).To(HaveLen(1))

	c := &fbc.Catalog{Packages: published.Packages, Bundles: []fbc.Bundle{inline}}
	tc := testCatalog{dir: filepath.Join(t.TempDir(), "catalog"), current: inline.Name,
		defaultChannel: published.Packages[0].DefaultChannel}
	for _, ch := range published.Channels {
		i := slices.IndexFunc(ch.Entries, func(e fbc.ChannelEntry) bool { return e.Name == inline.Name })
		if i < 0 {
			continue
		}
		ch.Entries = []fbc.ChannelEntry{ch.Entries[i]}
		c.Channels = append(c.Channels, ch)
		tc.channels = append(tc.channels, ch.Name)
	}
	Expect(tc.channels).To(ContainElement(tc.defaultChannel), "bundle/ is in the default channel")

	if withPrevious {
		prev, err := opm.RenderBundle(ctx, previousBundle(t, bundleDir, previousVersion), "", false)
		Expect(err).NotTo(HaveOccurred(), "rendering the previous bundle")
		tc.previous = prev.Name
		c.Bundles = append(c.Bundles, prev)
		for i := range c.Channels {
			current := c.Channels[i].Entries[0]
			current.Replaces = prev.Name
			c.Channels[i].Entries = []fbc.ChannelEntry{{Name: prev.Name}, current}
		}
	}
	Expect(c.WriteJSON(filepath.Join(tc.dir, packageName, "catalog.json"))).To(Succeed())
	Expect(opm.Validate(ctx, tc.dir)).To(Succeed())
	return tc
}

// previousBundle copies the bundle directory with its CSV renamed to
// <package>.v<version> at that version, without upgrade edges of its own.
func previousBundle(t *testing.T, bundleDir, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle-"+version)
	Expect(os.CopyFS(dir, os.DirFS(bundleDir))).To(Succeed())
	manifests, err := filepath.Glob(filepath.Join(dir, "manifests", "*"))
	Expect(err).NotTo(HaveOccurred())
	found := false
	for _, path := range manifests {
		raw, err := os.ReadFile(path)
		Expect(err).NotTo(HaveOccurred())
		js, err := yaml.ToJSON(raw)
		Expect(err).NotTo(HaveOccurred(), path)
		obj := &unstructured.Unstructured{}
		Expect(obj.UnmarshalJSON(js)).To(Succeed(), path)
		if obj.GetKind() != "ClusterServiceVersion" {
			continue
		}
		found = true
		obj.SetName(packageName + ".v" + version)
		annotations := obj.GetAnnotations()
		delete(annotations, fbc.SkipRangeAnnotation)
		obj.SetAnnotations(annotations)
		Expect(unstructured.SetNestedField(obj.Object, version, "spec", "version")).To(Succeed())
		unstructured.RemoveNestedField(obj.Object, "spec", "replaces")
		unstructured.RemoveNestedField(obj.Object, "spec", "skips")
		out, err := json.Marshal(obj.Object) // JSON is YAML
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(path, out, 0o600)).To(Succeed())
	}
	Expect(found).To(BeTrue(), "bundle/manifests has no ClusterServiceVersion")
	return dir
}

// serveCatalog runs `opm serve` on the catalog and a grpc CatalogSource in
// the olm namespace that points at it, and waits until the catalog operator
// reports the connection READY. Both go away when the test ends.
func serveCatalog(t *testing.T, name string, tc testCatalog) {
	t.Helper()
	port := freePort(t)
	p, err := processes.start("opm-"+name, tools.OPM, nil, "serve", tc.dir,
		"--port="+strconv.Itoa(port),
		"--pprof-addr=", // no profiling endpoint (it would take localhost:6060)
		"--termination-log="+filepath.Join(t.TempDir(), "termination-log"),
	)
	Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = p.stop() })

	cs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1",
		"kind":       "CatalogSource",
		"metadata":   map[string]any{"name": name, "namespace": olmNamespace},
		"spec": map[string]any{
			"sourceType":  "grpc",
			"address":     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			"displayName": "echo-operator test catalog",
			"publisher":   "echo-operator",
		},
	}}
	ctx := context.Background()
	Expect(k8sClient.Create(ctx, cs)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), cs) })
	Eventually(func(g Gomega) string {
		expectOLMRunning()
		if !p.running() {
			StopTrying("opm serve exited; see " + p.logPath).Now()
		}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cs), cs)).To(Succeed())
		state, _, _ := unstructured.NestedString(cs.Object, "status", "connectionState", "lastObservedState")
		return state
	}, timeout, interval).Should(Equal("READY"), "CatalogSource %s never connected to opm serve", name)
}

// freePort returns a TCP port free on 127.0.0.1 (in the suite's own network
// namespace, nothing else takes it).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
