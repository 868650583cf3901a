package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// bundleWithAnnotations writes a bundle directory holding only
// metadata/annotations.yaml with the given annotations.
func bundleWithAnnotations(t *testing.T, annotations string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "metadata"), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "annotations:\n  # a comment\n  operators.operatorframework.io.bundle.package.v1: echo-operator\n" + annotations
	if err := os.WriteFile(filepath.Join(dir, "metadata", "annotations.yaml"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBundleChannels(t *testing.T) {
	full := bundleWithAnnotations(t, "  "+channelsAnnotation+": alpha,stable\n  "+defaultChannelAnnotation+": stable\n")
	single := bundleWithAnnotations(t, "  "+channelsAnnotation+": stable\n")
	several := bundleWithAnnotations(t, "  "+channelsAnnotation+": alpha,stable\n")
	for _, tc := range []struct {
		name        string
		opts        options
		channels    []string
		defaultChan string
		err         string
	}{
		{name: "from the bundle", opts: options{bundleDir: full},
			channels: []string{"alpha", "stable"}, defaultChan: "stable"},
		{name: "overridden", opts: options{bundleDir: full, channels: " fast , stable,", defaultChannel: "fast"},
			channels: []string{"fast", "stable"}, defaultChan: "fast"},
		{name: "both given: the bundle's annotations are not read", opts: options{bundleDir: "missing", channels: "stable", defaultChannel: "stable"},
			channels: []string{"stable"}, defaultChan: "stable"},
		{name: "a single channel is the default", opts: options{bundleDir: single},
			channels: []string{"stable"}, defaultChan: "stable"},
		{name: "no default among several", opts: options{bundleDir: several}, err: "no default channel"},
		{name: "no channels", opts: options{bundleDir: "missing", channels: ",", defaultChannel: "stable"}, err: "no channels"},
		{name: "no annotations", opts: options{bundleDir: "missing"}, err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			channels, def, err := bundleChannels(tc.opts)
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(channels).To(Equal(tc.channels))
			g.Expect(def).To(Equal(tc.defaultChan))
		})
	}
}
