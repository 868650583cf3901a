package fbc

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const csvJSON = `{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion",
"metadata":{"name":"echo-operator.v0.2.0","annotations":{"olm.skipRange":"<0.2.0"}},
"spec":{"version":"0.2.0","replaces":"echo-operator.v0.1.0","skips":["echo-operator.v0.1.1"],
"icon":[{"base64data":"PHN2Zz4=","mediatype":"image/svg+xml"}]}}`

func objectProperty(obj string) Property {
	v, _ := json.Marshal(map[string]string{"data": base64.StdEncoding.EncodeToString([]byte(obj))})
	return Property{Type: PropertyBundleObject, Value: v}
}

func TestBundleCSVAndVersion(t *testing.T) {
	RegisterTestingT(t)
	b := Bundle{Schema: SchemaBundle, Name: "echo-operator.v0.2.0", Properties: []Property{
		objectProperty(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"echoes.echo.dev"}}`),
		objectProperty(csvJSON),
		{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"echo-operator","version":"0.2.0"}`)},
	}}
	Expect(b.Objects()).To(HaveLen(2))
	csv, err := b.CSV()
	Expect(err).NotTo(HaveOccurred())
	Expect(csv.Entry()).To(Equal(ChannelEntry{
		Name: "echo-operator.v0.2.0", Replaces: "echo-operator.v0.1.0",
		Skips: []string{"echo-operator.v0.1.1"}, SkipRange: "<0.2.0",
	}))
	Expect(csv.Version).To(Equal("0.2.0"))
	Expect(string(csv.Icon)).To(ContainSubstring(`"mediatype":"image/svg+xml"`))
	pkg, version, err := b.PackageVersion()
	Expect(err).NotTo(HaveOccurred())
	Expect(pkg).To(Equal("echo-operator"))
	Expect(version).To(Equal("0.2.0"))

	_, err = Bundle{Name: "metadata-only", Properties: b.Properties[2:]}.CSV()
	Expect(err).To(MatchError(ContainSubstring("no ClusterServiceVersion")))
	_, _, err = Bundle{Name: "no-package"}.PackageVersion()
	Expect(err).To(MatchError(ContainSubstring("no olm.package property")))
}

func TestCatalogUpserts(t *testing.T) {
	RegisterTestingT(t)
	c := &Catalog{}
	c.SetPackage("echo-operator", "stable", json.RawMessage(`{"base64data":"","mediatype":"image/png"}`))
	c.SetPackage("echo-operator", "alpha", nil)
	Expect(c.Packages).To(HaveLen(1))
	Expect(c.Packages[0].DefaultChannel).To(Equal("alpha"))
	Expect(c.Packages[0].Icon).NotTo(BeNil(), "an update without an icon keeps the icon")

	v1 := ChannelEntry{Name: "echo-operator.v0.1.0", SkipRange: "<0.1.0"}
	v2 := ChannelEntry{Name: "echo-operator.v0.2.0", Replaces: "echo-operator.v0.1.0"}
	c.SetEntry("echo-operator", "stable", v1)
	c.SetEntry("echo-operator", "stable", v2)
	c.SetEntry("echo-operator", "alpha", v2)
	v2.SkipRange = "<0.2.0"
	c.SetEntry("echo-operator", "stable", v2)
	Expect(c.Channel("echo-operator", "stable").Entries).To(Equal([]ChannelEntry{v1, v2}), "releases accumulate; an entry is replaced")
	Expect(c.Channel("echo-operator", "alpha").Entries).To(HaveLen(1))
	Expect(c.Channel("echo-operator", "beta")).To(BeNil())

	c.SetBundle(Bundle{Schema: SchemaBundle, Name: "echo-operator.v0.1.0", Image: "a"})
	c.SetBundle(Bundle{Schema: SchemaBundle, Name: "echo-operator.v0.1.0", Image: "b"})
	c.SetBundle(Bundle{Schema: SchemaBundle, Name: "echo-operator.v0.2.0", Image: "c"})
	Expect(c.Bundles).To(HaveLen(2))
	Expect(c.Bundle("echo-operator.v0.1.0").Image).To(Equal("b"))
	Expect(c.Bundle("echo-operator.v9")).To(BeNil())
}

func TestParseRoundTrip(t *testing.T) {
	RegisterTestingT(t)
	in := `{"schema":"olm.package","name":"p","defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":"p","entries":[{"name":"p.v1","skipRange":"<1.0.0"}]}
{"schema":"olm.bundle","name":"p.v1","package":"p","image":"","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
{"schema":"olm.deprecations","package":"p","entries":[]}
`
	c, err := Parse(strings.NewReader(in))
	Expect(err).NotTo(HaveOccurred())
	Expect(c.Packages).To(HaveLen(1))
	Expect(c.Channels).To(HaveLen(1))
	Expect(c.Bundles).To(HaveLen(1))
	Expect(c.Others).To(HaveLen(1), "blobs of other schemas are kept")

	file := filepath.Join(t.TempDir(), "catalog.json")
	Expect(c.WriteJSON(file)).To(Succeed())
	raw, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	again, err := Parse(strings.NewReader(string(raw)))
	Expect(err).NotTo(HaveOccurred())
	Expect(again.WriteJSON(file)).To(Succeed())
	rewritten, err := os.ReadFile(file)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(rewritten)).To(Equal(string(raw)), "a round trip changes nothing")
	Expect(string(raw)).To(ContainSubstring(`"skipRange": "<1.0.0"`), "no HTML escaping")

	_, err = Parse(strings.NewReader(`{"schema":"olm.bundle","name":"x","image":"","unknown":1}`))
	Expect(err).To(MatchError(ContainSubstring(`unknown field "unknown"`)), "nothing is dropped silently")
}
