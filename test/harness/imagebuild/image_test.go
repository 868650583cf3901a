package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeRegistry serves blobs and manifests by digest, and tags, as the
// registry's HTTP API does.
type fakeRegistry struct {
	blobs map[string][]byte
	types map[string]string // media type of each manifest, by digest
	tags  map[string]string // digest of each tag
}

func (f *fakeRegistry) add(mediaType string, data []byte) ocispec.Descriptor {
	d := digest.FromBytes(data)
	f.blobs[d.String()] = data
	if mediaType != "" {
		f.types[d.String()] = mediaType
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v2/app/")
	kind, ref, _ := strings.Cut(rest, "/")
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	if d, ok := f.tags[ref]; ok && kind == "manifests" {
		ref = d
	}
	data, ok := f.blobs[ref]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if kind == "manifests" {
		w.Header().Set("Content-Type", f.types[ref])
		w.Header().Set("Docker-Content-Digest", ref)
	}
	_, _ = w.Write(data)
}

type entry struct {
	// data is a regular file's content; empty means its name.
	name, link, data string
	mode             int64
	uid              int
	typ              byte
}

func layer(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, Typeflag: e.typ, Linkname: e.link}
		data := e.data
		if data == "" {
			data = e.name
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			_, _ = tw.Write([]byte(data))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReadImageMergesLayers reads an image behind an index: its
// configuration, and its files after the whiteouts of an upper layer.
func TestReadImageMergesLayers(t *testing.T) {
	reg := &fakeRegistry{blobs: map[string][]byte{}, types: map[string]string{}, tags: map[string]string{}}
	lower := reg.add(ocispec.MediaTypeImageLayerGzip, layer(t,
		entry{name: "etc/", mode: 0o755, typ: tar.TypeDir},
		entry{name: "etc/passwd", mode: 0o644, typ: tar.TypeReg},
		entry{name: "tmp/", mode: 0o1777, typ: tar.TypeDir},
		entry{name: "old/", mode: 0o755, typ: tar.TypeDir},
		entry{name: "old/file", mode: 0o644, typ: tar.TypeReg},
		entry{name: "opaque/", mode: 0o755, typ: tar.TypeDir},
		entry{name: "opaque/gone", mode: 0o644, typ: tar.TypeReg},
	))
	upper := reg.add(ocispec.MediaTypeImageLayerGzip, layer(t,
		entry{name: "old/.wh..wh..opq", typ: tar.TypeReg},
		entry{name: ".wh.opaque", typ: tar.TypeReg},
		entry{name: "manager", mode: 0o755, uid: 65532, typ: tar.TypeReg},
		entry{name: "bin/sh", link: "busybox", mode: 0o777, typ: tar.TypeSymlink},
	))
	var cfg ocispec.Image
	cfg.OS, cfg.Architecture = "linux", runtime.GOARCH
	cfg.Config.User, cfg.Config.Entrypoint = "65532:65532", []string{"/manager"}
	config := reg.add(ocispec.MediaTypeImageConfig, mustJSON(t, cfg))
	manifest := reg.add(ocispec.MediaTypeImageManifest, mustJSON(t, ocispec.Manifest{
		MediaType: ocispec.MediaTypeImageManifest, Config: config, Layers: []ocispec.Descriptor{lower, upper}}))
	manifest.Platform = &ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH}
	other := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("other"),
		Platform: &ocispec.Platform{OS: "windows", Architecture: runtime.GOARCH}}
	index := reg.add(ocispec.MediaTypeImageIndex, mustJSON(t, ocispec.Index{
		MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{other, manifest}}))
	reg.tags["v1"] = index.Digest.String()
	srv := httptest.NewServer(reg)
	defer srv.Close()

	img, err := ReadImage(context.Background(), strings.TrimPrefix(srv.URL, "http://"), "app", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if img.Digest != manifest.Digest.String() {
		t.Errorf("digest %s, want the platform's manifest %s", img.Digest, manifest.Digest)
	}
	if img.Config.Config.User != "65532:65532" || img.Config.Config.Entrypoint[0] != "/manager" {
		t.Errorf("configuration %+v", img.Config.Config)
	}
	for _, gone := range []string{"/old/file", "/opaque", "/opaque/gone", "/old/.wh..wh..opq", "/.wh.opaque"} {
		if _, ok := img.Files[gone]; ok {
			t.Errorf("%s is in the image after a whiteout", gone)
		}
	}
	if f := img.Files["/manager"]; f.Mode != 0o755 || f.UID != 65532 || f.Size != int64(len("manager")) {
		t.Errorf("/manager: %+v", f)
	}
	if f := img.Files["/tmp"]; f.Mode != fs.ModeDir|fs.ModeSticky|0o777 {
		t.Errorf("/tmp has mode %s", f.Mode)
	}
	if f := img.Files["/bin/sh"]; f.Mode&fs.ModeSymlink == 0 || f.Linkname != "busybox" {
		t.Errorf("/bin/sh: %+v", f)
	}
	if _, ok := img.Files["/old"]; !ok {
		t.Error("an opaque whiteout removed its own directory")
	}
	if _, err := ReadImage(context.Background(), strings.TrimPrefix(srv.URL, "http://"), "app", "missing"); err == nil {
		t.Error("reading a missing tag succeeded")
	}
}

// elfHeader is the start of a 64-bit ELF executable for machine, in the
// byte order order, up to e_machine and a little beyond.
func elfHeader(order binary.ByteOrder, machine elf.Machine) string {
	h := make([]byte, 24)
	copy(h, elf.ELFMAG)
	h[elf.EI_CLASS], h[elf.EI_DATA], h[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	if order == binary.BigEndian {
		h[elf.EI_DATA] = byte(elf.ELFDATA2MSB)
	}
	order.PutUint16(h[16:], uint16(elf.ET_EXEC))
	order.PutUint16(h[18:], uint16(machine))
	return string(h)
}

// TestReadIndexReadsEveryPlatform reads an index of two platforms: each
// image with the platform the index gives it, its configuration's, and
// the ELF machine of its binaries; a single image is not an index.
func TestReadIndexReadsEveryPlatform(t *testing.T) {
	reg := &fakeRegistry{blobs: map[string][]byte{}, types: map[string]string{}, tags: map[string]string{}}
	var manifests []ocispec.Descriptor
	for _, p := range []struct {
		arch    string
		order   binary.ByteOrder
		machine elf.Machine
	}{{"amd64", binary.LittleEndian, elf.EM_X86_64}, {"arm64", binary.LittleEndian, elf.EM_AARCH64}, {"s390x", binary.BigEndian, elf.EM_S390}} {
		files := reg.add(ocispec.MediaTypeImageLayerGzip, layer(t,
			entry{name: "manager", data: elfHeader(p.order, p.machine) + "code", mode: 0o755, typ: tar.TypeReg},
			entry{name: "short", data: elf.ELFMAG, mode: 0o644, typ: tar.TypeReg},
			entry{name: "watches.yaml", mode: 0o644, typ: tar.TypeReg}))
		var cfg ocispec.Image
		cfg.OS, cfg.Architecture = "linux", p.arch
		config := reg.add(ocispec.MediaTypeImageConfig, mustJSON(t, cfg))
		m := reg.add(ocispec.MediaTypeImageManifest, mustJSON(t, ocispec.Manifest{
			MediaType: ocispec.MediaTypeImageManifest, Config: config, Layers: []ocispec.Descriptor{files}}))
		m.Platform = &ocispec.Platform{OS: "linux", Architecture: p.arch}
		manifests = append(manifests, m)
	}
	index := reg.add(ocispec.MediaTypeImageIndex, mustJSON(t, ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: manifests}))
	reg.tags["v1"] = index.Digest.String()
	reg.tags["single"] = manifests[0].Digest.String()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	idx, err := ReadIndex(context.Background(), host, "app", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if idx.Digest != index.Digest.String() || len(idx.Manifests) != 3 {
		t.Fatalf("index %s of %d images, want %s of 3", idx.Digest, len(idx.Manifests), index.Digest)
	}
	for i, want := range []elf.Machine{elf.EM_X86_64, elf.EM_AARCH64, elf.EM_S390} {
		m := idx.Manifests[i]
		if m.Digest != manifests[i].Digest.String() || m.Platform.Architecture != m.Config.Architecture {
			t.Errorf("image %d: %s of platform %s, configuration's architecture %s", i, m.Digest, m.Platform.Architecture, m.Config.Architecture)
		}
		if got := m.Files["/manager"].Machine; got != want {
			t.Errorf("%s: /manager's machine %s, want %s", m.Platform.Architecture, got, want)
		}
		for _, f := range []string{"/short", "/watches.yaml"} {
			if got := m.Files[f].Machine; got != elf.EM_NONE {
				t.Errorf("%s: %s has machine %s, want none", m.Platform.Architecture, f, got)
			}
		}
	}
	if _, err := ReadIndex(context.Background(), host, "app", "single"); err == nil || !strings.Contains(err.Error(), "not an index") {
		t.Errorf("reading a single image as an index: %v", err)
	}
}
