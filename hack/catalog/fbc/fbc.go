// Package fbc builds the operator's file-based catalog (the olm.package,
// olm.channel and olm.bundle blobs OLM reads through `opm serve`) from a
// registry+v1 bundle directory. opm does the parts it owns: rendering a
// bundle into its olm.bundle blob, loading, formatting and validating a
// catalog; this package puts the blobs together.
package fbc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Blob schemas and property types of a file-based catalog.
const (
	SchemaPackage = "olm.package"
	SchemaChannel = "olm.channel"
	SchemaBundle  = "olm.bundle"

	PropertyPackage      = "olm.package"
	PropertyBundleObject = "olm.bundle.object"
	PropertyCSVMetadata  = "olm.csv.metadata"

	// SkipRangeAnnotation is the CSV annotation whose value becomes the
	// channel entry's skipRange.
	SkipRangeAnnotation = "olm.skipRange"

	// FileName is the catalog file written under <catalog>/<package>/.
	FileName = "catalog.yaml"
)

// Package is an olm.package blob.
type Package struct {
	Schema         string          `json:"schema"`
	Name           string          `json:"name"`
	DefaultChannel string          `json:"defaultChannel"`
	Icon           json.RawMessage `json:"icon,omitempty"`
	Description    string          `json:"description,omitempty"`
	Properties     []Property      `json:"properties,omitempty"`
}

// Channel is an olm.channel blob.
type Channel struct {
	Schema     string         `json:"schema"`
	Name       string         `json:"name"`
	Package    string         `json:"package"`
	Entries    []ChannelEntry `json:"entries"`
	Properties []Property     `json:"properties,omitempty"`
}

// ChannelEntry is one bundle of a channel and the upgrade edges into it.
type ChannelEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// Bundle is an olm.bundle blob.
type Bundle struct {
	Schema        string          `json:"schema"`
	Name          string          `json:"name"`
	Package       string          `json:"package"`
	Image         string          `json:"image"`
	Properties    []Property      `json:"properties,omitempty"`
	RelatedImages json.RawMessage `json:"relatedImages,omitempty"`
}

// Property is a typed property of a bundle.
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// Catalog holds the blobs of a catalog; blobs of other schemas are kept
// as they are.
type Catalog struct {
	Packages []Package
	Channels []Channel
	Bundles  []Bundle
	Others   []json.RawMessage
}

// CSV is what a catalog needs from a bundle's ClusterServiceVersion.
type CSV struct {
	Name      string
	Version   string
	Replaces  string
	Skips     []string
	SkipRange string
	Icon      json.RawMessage
}

// OPM runs the opm binary at Path.
type OPM struct {
	Path string
}

func (o OPM) run(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, o.Path, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("opm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// RenderBundle renders a bundle directory into its olm.bundle blob, with
// image as the bundle image reference ("" leaves it empty; opm reads it as
// a template of .Package, .Name and .Version, so a plain reference is taken
// as it is). Every manifest
// of the bundle is carried inline as an olm.bundle.object property, unless
// csvMetadata is set: then only the CSV's metadata is, as an
// olm.csv.metadata property, and OLM unpacks the manifests from the image.
func (o OPM) RenderBundle(ctx context.Context, dir, image string, csvMetadata bool) (Bundle, error) {
	args := []string{"render", dir, "--output=json"}
	if image != "" {
		args = append(args, "--alpha-image-ref-template="+image)
	}
	if csvMetadata {
		args = append(args, "--migrate-level=bundle-object-to-csv-metadata")
	}
	out, err := o.run(ctx, args...)
	if err != nil {
		return Bundle{}, err
	}
	c, err := Parse(bytes.NewReader(out))
	if err != nil {
		return Bundle{}, fmt.Errorf("reading the rendered bundle %s: %w", dir, err)
	}
	if len(c.Bundles) != 1 || len(c.Packages)+len(c.Channels)+len(c.Others) != 0 {
		return Bundle{}, fmt.Errorf("rendering %s: want one olm.bundle blob, got %d bundles and %d other blobs",
			dir, len(c.Bundles), len(c.Packages)+len(c.Channels)+len(c.Others))
	}
	return c.Bundles[0], nil
}

// Load reads a catalog directory through opm.
func (o OPM) Load(ctx context.Context, path string) (*Catalog, error) {
	out, err := o.run(ctx, "render", path, "--output=json")
	if err != nil {
		return nil, err
	}
	return Parse(bytes.NewReader(out))
}

// Validate runs `opm validate` on a catalog directory.
func (o OPM) Validate(ctx context.Context, dir string) error {
	_, err := o.run(ctx, "validate", dir)
	return err
}

// WriteYAML writes the catalog to file in opm's YAML form (blobs ordered
// and formatted as `opm render -o yaml` writes them), then validates it.
func (o OPM) WriteYAML(ctx context.Context, c *Catalog, file string) error {
	tmp, err := os.MkdirTemp("", "echo-catalog-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	src := filepath.Join(tmp, "in", "catalog.json")
	if err := c.WriteJSON(src); err != nil {
		return err
	}
	out, err := o.run(ctx, "render", filepath.Dir(src), "--output=yaml")
	if err != nil {
		return err
	}
	// Validate the result on its own before it replaces anything.
	check := filepath.Join(tmp, "out", "catalog", filepath.Base(filepath.Dir(file)), filepath.Base(file))
	if err := writeFile(check, out); err != nil {
		return err
	}
	if err := o.Validate(ctx, filepath.Join(tmp, "out", "catalog")); err != nil {
		return err
	}
	return writeFile(file, out)
}

// WriteJSON writes the catalog as a stream of JSON blobs, which opm reads
// as it reads YAML.
func (c *Catalog) WriteJSON(file string) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	for _, v := range c.blobs() {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return writeFile(file, buf.Bytes())
}

func (c *Catalog) blobs() []any {
	var out []any
	for _, p := range c.Packages {
		out = append(out, p)
	}
	for _, ch := range c.Channels {
		out = append(out, ch)
	}
	for _, b := range c.Bundles {
		out = append(out, b)
	}
	for _, o := range c.Others {
		out = append(out, o)
	}
	return out
}

func writeFile(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// Parse reads a stream of JSON blobs, as `opm render -o json` writes them.
func Parse(r io.Reader) (*Catalog, error) {
	c := &Catalog{}
	dec := json.NewDecoder(r)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			return c, nil
		} else if err != nil {
			return nil, err
		}
		if err := c.add(raw); err != nil {
			return nil, err
		}
	}
}

func (c *Catalog) add(raw json.RawMessage) error {
	var meta struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		return err
	}
	var err error
	switch meta.Schema {
	case SchemaPackage:
		var p Package
		err = strictUnmarshal(raw, &p)
		c.Packages = append(c.Packages, p)
	case SchemaChannel:
		var ch Channel
		err = strictUnmarshal(raw, &ch)
		c.Channels = append(c.Channels, ch)
	case SchemaBundle:
		var b Bundle
		err = strictUnmarshal(raw, &b)
		c.Bundles = append(c.Bundles, b)
	default:
		c.Others = append(c.Others, raw)
	}
	if err != nil {
		return fmt.Errorf("reading a %s blob: %w", meta.Schema, err)
	}
	return nil
}

// strictUnmarshal fails on fields the types above do not know, so that
// nothing of a blob is dropped silently on a round trip.
func strictUnmarshal(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// CSV returns the bundle's ClusterServiceVersion, from its olm.bundle.object
// properties (a bundle rendered without csvMetadata).
func (b Bundle) CSV() (CSV, error) {
	for _, obj := range b.Objects() {
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Spec struct {
				Version  string            `json:"version"`
				Replaces string            `json:"replaces"`
				Skips    []string          `json:"skips"`
				Icon     []json.RawMessage `json:"icon"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(obj, &o); err != nil {
			return CSV{}, fmt.Errorf("bundle %s: decoding an object: %w", b.Name, err)
		}
		if o.Kind != "ClusterServiceVersion" {
			continue
		}
		csv := CSV{
			Name:      o.Metadata.Name,
			Version:   o.Spec.Version,
			Replaces:  o.Spec.Replaces,
			Skips:     o.Spec.Skips,
			SkipRange: o.Metadata.Annotations[SkipRangeAnnotation],
		}
		if len(o.Spec.Icon) > 0 {
			csv.Icon = o.Spec.Icon[0]
		}
		return csv, nil
	}
	return CSV{}, fmt.Errorf("bundle %s carries no ClusterServiceVersion object", b.Name)
}

// Objects returns the manifests carried as olm.bundle.object properties.
func (b Bundle) Objects() []json.RawMessage {
	var out []json.RawMessage
	for _, p := range b.Properties {
		if p.Type != PropertyBundleObject {
			continue
		}
		var v struct {
			Data []byte `json:"data"`
		}
		if err := json.Unmarshal(p.Value, &v); err == nil {
			out = append(out, v.Data)
		}
	}
	return out
}

// PackageVersion returns the package name and version of the bundle's
// olm.package property.
func (b Bundle) PackageVersion() (pkg, version string, err error) {
	for _, p := range b.Properties {
		if p.Type != PropertyPackage {
			continue
		}
		var v struct {
			PackageName string `json:"packageName"`
			Version     string `json:"version"`
		}
		if err := json.Unmarshal(p.Value, &v); err != nil {
			return "", "", fmt.Errorf("bundle %s: %s property: %w", b.Name, PropertyPackage, err)
		}
		return v.PackageName, v.Version, nil
	}
	return "", "", fmt.Errorf("bundle %s has no %s property", b.Name, PropertyPackage)
}

// Entry returns the channel entry of a bundle from its CSV: its name and
// its upgrade edges (spec.replaces, spec.skips and the olm.skipRange
// annotation).
func (csv CSV) Entry() ChannelEntry {
	return ChannelEntry{Name: csv.Name, Replaces: csv.Replaces, Skips: csv.Skips, SkipRange: csv.SkipRange}
}

// SetPackage creates or updates the package blob.
func (c *Catalog) SetPackage(name, defaultChannel string, icon json.RawMessage) {
	for i := range c.Packages {
		if c.Packages[i].Name == name {
			c.Packages[i].DefaultChannel = defaultChannel
			if icon != nil {
				c.Packages[i].Icon = icon
			}
			return
		}
	}
	c.Packages = append(c.Packages, Package{Schema: SchemaPackage, Name: name, DefaultChannel: defaultChannel, Icon: icon})
}

// SetBundle adds the bundle, or replaces the one of the same name.
func (c *Catalog) SetBundle(b Bundle) {
	for i := range c.Bundles {
		if c.Bundles[i].Name == b.Name {
			c.Bundles[i] = b
			return
		}
	}
	c.Bundles = append(c.Bundles, b)
}

// SetEntry adds the entry to the package's channel (created if missing), or
// replaces the entry of the same name.
func (c *Catalog) SetEntry(pkg, channel string, e ChannelEntry) {
	for i := range c.Channels {
		ch := &c.Channels[i]
		if ch.Package != pkg || ch.Name != channel {
			continue
		}
		if j := slices.IndexFunc(ch.Entries, func(x ChannelEntry) bool { return x.Name == e.Name }); j >= 0 {
			ch.Entries[j] = e
		} else {
			ch.Entries = append(ch.Entries, e)
		}
		return
	}
	c.Channels = append(c.Channels, Channel{Schema: SchemaChannel, Name: channel, Package: pkg, Entries: []ChannelEntry{e}})
}

// Channel returns the package's channel of that name, or nil.
func (c *Catalog) Channel(pkg, name string) *Channel {
	for i := range c.Channels {
		if c.Channels[i].Package == pkg && c.Channels[i].Name == name {
			return &c.Channels[i]
		}
	}
	return nil
}

// Bundle returns the bundle of that name, or nil.
func (c *Catalog) Bundle(name string) *Bundle {
	for i := range c.Bundles {
		if c.Bundles[i].Name == name {
			return &c.Bundles[i]
		}
	}
	return nil
}
