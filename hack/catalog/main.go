package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/echo-operator/echo-operator/test/harness/testcerts"
)

// Keys of a bundle's metadata/annotations.yaml.
const (
	channelsAnnotation       = "operators.operatorframework.io.bundle.channels.v1"
	defaultChannelAnnotation = "operators.operatorframework.io.bundle.channel.default.v1"
)

func main() {
	var o options
	flag.StringVar(&o.opm, "opm", os.Getenv("OPM"), "path of the opm binary (`make opm` builds it)")
	flag.StringVar(&o.template, "template", "catalog-template.yaml", "the catalog template")
	flag.StringVar(&o.bundleDir, "bundle-dir", "bundle", "the registry+v1 bundle directory")
	flag.StringVar(&o.bundleImage, "bundle-image", os.Getenv("BUNDLE_IMG"), "the image of the bundle directory")
	flag.StringVar(&o.out, "o", "", "the catalog file to write")
	var images string
	flag.StringVar(&images, "bundle-images", os.Getenv("BUNDLE_IMGS"), "bundle images the catalog must hold, comma-separated (default: the -bundle-image)")
	flag.Parse()
	o.bundleImages = splitImages(images)
	if err := render(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type options struct {
	opm, template, bundleDir, bundleImage, out string
	// bundleImages must each be an olm.bundle entry of the template.
	bundleImages []string
}

// splitImages splits a comma-separated list of images.
func splitImages(list string) []string {
	var images []string
	for _, image := range strings.Split(list, ",") {
		if image = strings.TrimSpace(image); image != "" {
			images = append(images, image)
		}
	}
	return images
}

// checkImages returns the images the template has no olm.bundle entry for.
func checkImages(t template, images []string) error {
	var errs []error
	for _, image := range images {
		if !slices.ContainsFunc(t.Entries, func(e templateEntry) bool { return e.Schema == "olm.bundle" && e.Image == image }) {
			errs = append(errs, fmt.Errorf("no olm.bundle entry has the image %s: add the release to the template", image))
		}
	}
	return errors.Join(errs...)
}

// template is what the command reads of a basic template.
type template struct {
	Schema  string          `json:"schema"`
	Entries []templateEntry `json:"entries"`
}

// templateEntry is an entry of a basic template: a package, a channel or a bundle.
type templateEntry struct {
	Schema         string          `json:"schema"`
	Name           string          `json:"name"`
	DefaultChannel string          `json:"defaultChannel"`
	Icon           json.RawMessage `json:"icon"`
	Image          string          `json:"image"`
	Entries        []entry         `json:"entries"`
}

// entry is a channel entry, and the upgrade edges a CSV declares.
type entry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// bundle is what the command reads of the bundle directory.
type bundle struct {
	annotations map[string]string
	csv         entry
	icon        json.RawMessage
}

func render(ctx context.Context, o options) error {
	if o.opm == "" || o.bundleImage == "" || o.out == "" {
		return errors.New("usage: catalog -opm OPM -bundle-image BUNDLE_IMG -o FILE [-template FILE] [-bundle-dir DIR]")
	}
	b, err := readBundle(o.bundleDir)
	if err != nil {
		return err
	}
	var t template
	if err := readYAML(o.template, &t); err != nil {
		return err
	}
	if err := checkTemplate(t, b, o.bundleImage); err != nil {
		return fmt.Errorf("%s does not agree with %s: %w", o.template, o.bundleDir, err)
	}
	if err := checkImages(t, o.bundleImages); err != nil {
		return fmt.Errorf("%s lacks bundles of -bundle-images: %w", o.template, err)
	}
	img, err := packBundle(o.bundleDir, b.annotations)
	if err != nil {
		return err
	}
	reg, env, stop, err := serve(o.bundleImage, img)
	if err != nil {
		return err
	}
	defer stop()

	cmd := exec.CommandContext(ctx, o.opm, "alpha", "render-template", "basic", o.template,
		"--output=yaml", "--migrate-level=bundle-object-to-csv-metadata")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("opm alpha render-template %s: %w", o.template, err)
	}
	if !reg.pulled.Load() {
		return fmt.Errorf("opm did not read %s from %s", o.bundleImage, o.bundleDir)
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(o.out, out, 0o644)
}

func readYAML(file string, v any) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	return nil
}

// readBundle reads the annotations of the bundle directory and its CSV.
func readBundle(dir string) (bundle, error) {
	var b bundle
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := readYAML(filepath.Join(dir, "metadata", "annotations.yaml"), &meta); err != nil {
		return b, err
	}
	b.annotations = meta.Annotations
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "*.yaml"))
	if err != nil {
		return b, err
	}
	for _, f := range files {
		var csv struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				Replaces string            `json:"replaces"`
				Skips    []string          `json:"skips"`
				Icon     []json.RawMessage `json:"icon"`
			} `json:"spec"`
		}
		if err := readYAML(f, &csv); err != nil {
			return b, err
		}
		if csv.Kind != "ClusterServiceVersion" {
			continue
		}
		b.csv = entry{Name: csv.Metadata.Name, Replaces: csv.Spec.Replaces, Skips: csv.Spec.Skips,
			SkipRange: csv.Metadata.Annotations["olm.skipRange"]}
		if len(csv.Spec.Icon) > 0 {
			b.icon = csv.Spec.Icon[0]
		}
		return b, nil
	}
	return b, fmt.Errorf("%s/manifests holds no ClusterServiceVersion", dir)
}

// checkTemplate returns what of the template disagrees with the bundle
// directory b and its image.
func checkTemplate(t template, b bundle, image string) error {
	if t.Schema != "olm.template.basic" {
		return fmt.Errorf("schema %q: want olm.template.basic", t.Schema)
	}
	var errs []error
	var channels []string
	imaged := false
	for _, e := range t.Entries {
		switch e.Schema {
		case "olm.package":
			if want := b.annotations[defaultChannelAnnotation]; want != "" && e.DefaultChannel != want {
				errs = append(errs, fmt.Errorf("the default channel is %s, the bundle's %s", e.DefaultChannel, want))
			}
			if !jsonEqual(e.Icon, b.icon) {
				errs = append(errs, errors.New("the package's icon is not the CSV's"))
			}
		case "olm.channel":
			i := slices.IndexFunc(e.Entries, func(x entry) bool { return x.Name == b.csv.Name })
			if i < 0 {
				continue
			}
			channels = append(channels, e.Name)
			if got, want := e.Entries[i], b.csv; got.Replaces != want.Replaces || got.SkipRange != want.SkipRange ||
				!slices.Equal(got.Skips, want.Skips) {
				errs = append(errs, fmt.Errorf("channel %s: %+v; the CSV says %+v", e.Name, got, want))
			}
		case "olm.bundle":
			imaged = imaged || e.Image == image
		}
	}
	if !imaged {
		errs = append(errs, fmt.Errorf("no olm.bundle entry has the image %s", image))
	}
	var want []string
	for _, c := range strings.Split(b.annotations[channelsAnnotation], ",") {
		if c = strings.TrimSpace(c); c != "" {
			want = append(want, c)
		}
	}
	slices.Sort(want)
	slices.Sort(channels)
	if !slices.Equal(channels, want) {
		errs = append(errs, fmt.Errorf("%s is in the channels %v, the bundle in %v", b.csv.Name, channels, want))
	}
	return errors.Join(errs...)
}

// jsonEqual reports whether a and b hold the same JSON value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	_ = json.Unmarshal(a, &x)
	_ = json.Unmarshal(b, &y)
	return reflect.DeepEqual(x, y)
}

// serve starts the registry of img on 127.0.0.1, over TLS with a
// certificate of its own, and writes into a new directory the
// configuration that makes opm pull image from it: a registries.conf that
// makes it the mirror of image's repository, a policy.json that accepts
// images, and the certificate's CA. It returns the registry, the
// environment of opm, and a function that stops the registry and removes
// the directory.
func serve(image string, img *bundleImage) (reg *registry, env []string, stop func(), err error) {
	// registry/repository:tag; registries.conf matches the repository.
	i := strings.LastIndex(image, ":")
	repo, tag := image[:max(i, 0)], image[i+1:]
	host, path, _ := strings.Cut(repo, "/")
	if i < 0 || strings.Contains(tag, "/") || strings.Contains(image, "@") || path == "" ||
		!strings.ContainsAny(host, ".:") && host != "localhost" {
		return nil, nil, nil, fmt.Errorf("bundle image %q: want registry/repository:tag", image)
	}
	dir, err := os.MkdirTemp("", "echo-catalog-")
	if err != nil {
		return nil, nil, nil, err
	}
	reg = &registry{repo: path, tag: tag, img: img}
	srv := &http.Server{Handler: reg, ReadHeaderTimeout: time.Minute}
	stop = func() {
		_ = srv.Close()
		_ = os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	ca, err := testcerts.NewCA("echo-operator catalog", time.Hour)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err := ca.Sign(testcerts.Leaf{CommonName: "127.0.0.1", IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, nil, err
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, nil, nil, err
	}
	go func() { _ = srv.Serve(l) }()

	conf := fmt.Sprintf("[[registry]]\nprefix = %q\nlocation = %q\n\n[[registry.mirror]]\nlocation = %q\n",
		repo, repo, l.Addr().String()+"/"+path)
	policy := `{"default": [{"type": "insecureAcceptAnything"}]}` + "\n"
	certs := filepath.Join(dir, "certs")
	if err = os.Mkdir(certs, 0o700); err == nil {
		err = errors.Join(
			os.WriteFile(filepath.Join(dir, "registries.conf"), []byte(conf), 0o600),
			os.WriteFile(filepath.Join(dir, "policy.json"), []byte(policy), 0o600),
			os.WriteFile(filepath.Join(certs, "ca.pem"), ca.CertPEM(), 0o600))
	}
	if err != nil {
		return nil, nil, nil, err
	}
	// Go adds the CAs of the directories of SSL_CERT_DIR to those of the
	// system's bundle file; the system's directories stay in the list.
	env = []string{
		"CONTAINERS_REGISTRIES_CONF=" + filepath.Join(dir, "registries.conf"),
		"CONTAINERS_REGISTRIES_CONF_OVERRIDE=",
		"CONTAINERS_POLICY_JSON=" + filepath.Join(dir, "policy.json"),
		"SSL_CERT_DIR=" + certs + ":" + cmp.Or(os.Getenv("SSL_CERT_DIR"), "/etc/ssl/certs:/etc/pki/tls/certs"),
	}
	return reg, env, stop, nil
}
