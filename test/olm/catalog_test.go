//go:build linux

package olm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/echo-operator/echo-operator/test/harness/olmbundle"
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

// blob is a blob of a file-based catalog, as `opm render` writes it.
type blob map[string]any

func (b blob) str(key string) string {
	s, _ := b[key].(string)
	return s
}

// opmRender renders a bundle or catalog directory with `opm render` into
// its blobs.
func opmRender(ctx context.Context, dir string) []blob {
	out, err := exec.CommandContext(ctx, tools.OPM, "render", dir, "--output=json").Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = fmt.Errorf("%w: %s", err, exit.Stderr)
	}
	Expect(err).NotTo(HaveOccurred(), "opm render %s", dir)
	var blobs []blob
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for {
		var b blob
		err := dec.Decode(&b)
		if errors.Is(err, io.EOF) {
			return blobs
		}
		Expect(err).NotTo(HaveOccurred(), "reading what opm rendered of %s", dir)
		blobs = append(blobs, b)
	}
}

// renderInline renders a bundle directory with `opm render` into its
// olm.bundle blob: no image, its manifests inline as olm.bundle.object
// properties.
func renderInline(ctx context.Context, dir string) blob {
	blobs := opmRender(ctx, dir)
	Expect(blobs).To(HaveLen(1), "opm render %s", dir)
	b := blobs[0]
	Expect(b.str("schema")).To(Equal("olm.bundle"))
	Expect(b.str("image")).To(BeEmpty())
	Expect(b["properties"]).To(ContainElement(HaveKeyWithValue("type", "olm.bundle.object")))
	return b
}

// buildTestCatalog writes the catalog the tests serve, a variant of the
// published one (catalog/echo-operator, which `make catalog` renders): the
// same package and, in each channel that holds the bundle of bundle/, its
// entry as published; that bundle alone, rendered by `opm render` from
// bundle/ with no image and its manifests inline. OLM then installs from
// the catalog's data alone; with an image it would run a Job to unpack the
// bundle, and KWOK runs no container. (Earlier releases in the published
// catalog are left out: their manifests are only in their images.)
// With withPrevious, a bundle of version 0.0.9 made from the same manifests
// precedes it in those channels, and the current entry replaces it.
func buildTestCatalog(t *testing.T, withPrevious bool) testCatalog {
	t.Helper()
	ctx := context.Background()
	bundleDir := filepath.Join(repoRoot, "bundle")
	current := renderInline(ctx, bundleDir)
	tc := testCatalog{dir: filepath.Join(t.TempDir(), "catalog"), current: current.str("name")}

	var blobs, channels []blob
	published := false
	for _, b := range opmRender(ctx, filepath.Join(repoRoot, "catalog", packageName)) {
		switch b.str("schema") {
		case "olm.package":
			tc.defaultChannel = b.str("defaultChannel")
			blobs = append(blobs, b)
		case "olm.channel":
			entries, _ := b["entries"].([]any)
			i := slices.IndexFunc(entries, func(e any) bool { return blob(e.(map[string]any)).str("name") == tc.current })
			if i < 0 {
				continue
			}
			b["entries"] = []any{entries[i]}
			channels = append(channels, b)
			tc.channels = append(tc.channels, b.str("name"))
		case "olm.bundle":
			if b.str("name") == tc.current {
				published = true
				Expect(b.str("image")).NotTo(BeEmpty(), "the published catalog names the bundle image")
			}
		}
	}
	Expect(published).To(BeTrue(), "the published catalog has no bundle %s: run `make catalog`", tc.current)
	Expect(blobs).To(HaveLen(1), "the published catalog has one package")
	Expect(tc.channels).To(ContainElement(tc.defaultChannel), "bundle/ is in the default channel")
	blobs = append(append(blobs, channels...), current)

	if withPrevious {
		prev := renderInline(ctx, previousBundle(t, bundleDir, previousVersion))
		tc.previous = prev.str("name")
		blobs = append(blobs, prev)
		for _, ch := range channels {
			entry := ch["entries"].([]any)[0].(map[string]any)
			entry["replaces"] = tc.previous
			ch["entries"] = []any{map[string]any{"name": tc.previous}, entry}
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, b := range blobs {
		Expect(enc.Encode(b)).To(Succeed())
	}
	Expect(os.MkdirAll(filepath.Join(tc.dir, packageName), 0o755)).To(Succeed())
	Expect(os.WriteFile(filepath.Join(tc.dir, packageName, "catalog.json"), buf.Bytes(), 0o600)).To(Succeed())
	out, err := exec.CommandContext(ctx, tools.OPM, "validate", tc.dir).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "opm validate: %s", out)
	return tc
}

// previousBundle copies the bundle directory with its CSV renamed to
// <package>.v<version> at that version, without upgrade edges of its own.
func previousBundle(t *testing.T, bundleDir, version string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle-"+version)
	Expect(olmbundle.Previous(bundleDir, dir, packageName, version)).To(Succeed())
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
