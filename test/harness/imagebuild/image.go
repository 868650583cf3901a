package imagebuild

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path"
	"runtime"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Image is an image as a registry serves it: its configuration and the
// files of its layers, merged.
type Image struct {
	// Digest is the digest of its manifest.
	Digest string
	Config ocispec.Image
	// Files are its files by absolute path ("/manager"), after the layers'
	// whiteouts.
	Files map[string]File
}

// File is a file of an image.
type File struct {
	Mode     fs.FileMode
	UID, GID int
	Size     int64
	// Linkname is a link's target.
	Linkname string
	// SHA256 is a regular file's content digest, in hex.
	SHA256 string
	// Machine is an ELF file's machine (elf.EM_X86_64, elf.EM_AARCH64),
	// from its header; elf.EM_NONE for any other file.
	Machine elf.Machine
}

// Index is a multi-platform image: an OCI index (or Docker manifest list)
// and the image of each of its manifests.
type Index struct {
	// Digest is the digest of the index.
	Digest    string
	Manifests []PlatformImage
}

// PlatformImage is an image of an index, with the platform the index
// gives it.
type PlatformImage struct {
	Platform ocispec.Platform
	*Image
}

const (
	mediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerIndex    = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// ReadImage reads the image repo:tag from the registry at host (plain
// HTTP): for an index, its manifest for this machine's platform.
func ReadImage(ctx context.Context, host, repo, tag string) (*Image, error) {
	c := newRegistryClient(host, repo)
	digest, mediaType, body, err := c.manifest(ctx, tag)
	if err != nil {
		return nil, err
	}
	if isIndex(mediaType) {
		if digest, err = platformManifest(body); err != nil {
			return nil, fmt.Errorf("%s/%s:%s: %w", host, repo, tag, err)
		}
		if _, _, body, err = c.manifest(ctx, digest); err != nil {
			return nil, err
		}
	}
	return c.image(ctx, digest, body)
}

// ReadIndex reads the index repo:ref (a tag or a digest) from the registry
// at host (plain HTTP), and every image it holds, each with the platform
// the index gives it. It fails when ref is a single image, or a manifest
// of the index has no platform.
func ReadIndex(ctx context.Context, host, repo, ref string) (*Index, error) {
	c := newRegistryClient(host, repo)
	digest, mediaType, body, err := c.manifest(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !isIndex(mediaType) {
		return nil, fmt.Errorf("%s/%s:%s is a %s, not an index", host, repo, ref, mediaType)
	}
	var idx ocispec.Index
	if err := json.Unmarshal(body, &idx); err != nil {
		return nil, fmt.Errorf("decoding the index %s/%s:%s: %w", host, repo, ref, err)
	}
	index := &Index{Digest: digest}
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			return nil, fmt.Errorf("%s/%s:%s: manifest %s has no platform", host, repo, ref, m.Digest)
		}
		_, _, body, err := c.manifest(ctx, m.Digest.String())
		if err != nil {
			return nil, err
		}
		img, err := c.image(ctx, m.Digest.String(), body)
		if err != nil {
			return nil, err
		}
		index.Manifests = append(index.Manifests, PlatformImage{Platform: *m.Platform, Image: img})
	}
	return index, nil
}

func isIndex(mediaType string) bool {
	return mediaType == ocispec.MediaTypeImageIndex || mediaType == mediaTypeDockerIndex
}

// image reads the configuration and the files of the image whose manifest
// is body.
func (c registryClient) image(ctx context.Context, digest string, body []byte) (*Image, error) {
	var manifest ocispec.Manifest
	if err := json.Unmarshal(body, &manifest); err != nil {
		return nil, fmt.Errorf("decoding the manifest %s of %s/%s: %w", digest, c.host, c.repo, err)
	}
	img := &Image{Digest: digest, Files: map[string]File{}}
	config, err := c.blob(ctx, manifest.Config.Digest.String())
	if err != nil {
		return nil, err
	}
	err = json.NewDecoder(config).Decode(&img.Config)
	_ = config.Close()
	if err != nil {
		return nil, fmt.Errorf("decoding the configuration of %s/%s@%s: %w", c.host, c.repo, digest, err)
	}
	for _, layer := range manifest.Layers {
		if err := c.readLayer(ctx, layer, img.Files); err != nil {
			return nil, err
		}
	}
	return img, nil
}

func platformManifest(index []byte) (string, error) {
	var idx ocispec.Index
	if err := json.Unmarshal(index, &idx); err != nil {
		return "", fmt.Errorf("decoding the index: %w", err)
	}
	for _, m := range idx.Manifests {
		if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
			return m.Digest.String(), nil
		}
	}
	return "", fmt.Errorf("no manifest for linux/%s in the index", runtime.GOARCH)
}

type registryClient struct {
	host, repo string
	http       *http.Client
}

func newRegistryClient(host, repo string) registryClient {
	return registryClient{host: host, repo: repo, http: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{Proxy: nil}}}
}

func (c registryClient) get(ctx context.Context, kind, ref string, accept ...string) (*http.Response, error) {
	url := fmt.Sprintf("http://%s/v2/%s/%s/%s", c.host, c.repo, kind, ref)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", strings.Join(accept, ", "))
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return resp, nil
}

// manifest returns the digest, media type and body of a manifest or index.
func (c registryClient) manifest(ctx context.Context, ref string) (digest, mediaType string, body []byte, err error) {
	resp, err := c.get(ctx, "manifests", ref, ocispec.MediaTypeImageIndex, ocispec.MediaTypeImageManifest,
		mediaTypeDockerIndex, mediaTypeDockerManifest)
	if err != nil {
		return "", "", nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err = io.ReadAll(resp.Body)
	return resp.Header.Get("Docker-Content-Digest"), resp.Header.Get("Content-Type"), body, err
}

func (c registryClient) blob(ctx context.Context, digest string) (io.ReadCloser, error) {
	resp, err := c.get(ctx, "blobs", digest)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// readLayer applies a layer's entries, and its whiteouts, to files.
func (c registryClient) readLayer(ctx context.Context, layer ocispec.Descriptor, files map[string]File) error {
	body, err := c.blob(ctx, layer.Digest.String())
	if err != nil {
		return err
	}
	defer func() { _ = body.Close() }()
	var r io.Reader = body
	switch {
	case strings.HasSuffix(layer.MediaType, "gzip"):
		gz, err := gzip.NewReader(body)
		if err != nil {
			return fmt.Errorf("layer %s: %w", layer.Digest, err)
		}
		r = gz
	case strings.HasSuffix(layer.MediaType, "tar"):
	default:
		return fmt.Errorf("layer %s: media type %s is not read here", layer.Digest, layer.MediaType)
	}
	if err := applyLayer(r, files); err != nil {
		return fmt.Errorf("layer %s: %w", layer.Digest, err)
	}
	return nil
}

// applyLayer applies the entries of a layer's tar stream, and its
// whiteouts, to files.
func applyLayer(r io.Reader, files map[string]File) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		dir, base := path.Split(name)
		switch {
		case base == ".wh..wh..opq":
			for f := range files {
				if strings.HasPrefix(f, dir) {
					delete(files, f)
				}
			}
		case strings.HasPrefix(base, ".wh."):
			gone := path.Join(dir, strings.TrimPrefix(base, ".wh."))
			for f := range files {
				if f == gone || strings.HasPrefix(f, gone+"/") {
					delete(files, f)
				}
			}
		default:
			f := File{Mode: h.FileInfo().Mode(), UID: h.Uid, GID: h.Gid, Size: h.Size, Linkname: h.Linkname}
			if h.Typeflag == tar.TypeReg {
				sum, head := sha256.New(), &headWriter{max: elfHeaderSize}
				if _, err := io.Copy(io.MultiWriter(sum, head), tr); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				f.SHA256 = hex.EncodeToString(sum.Sum(nil))
				f.Machine = elfMachine(head.b)
			}
			files[name] = f
		}
	}
}

// elfHeaderSize is how much of an ELF file's header elfMachine reads: up
// to e_machine.
const elfHeaderSize = 20

// elfMachine is the e_machine of an ELF file that starts with head, in the
// byte order its header names; elf.EM_NONE for any other file.
func elfMachine(head []byte) elf.Machine {
	if len(head) < elfHeaderSize || string(head[:4]) != elf.ELFMAG {
		return elf.EM_NONE
	}
	switch elf.Data(head[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		return elf.Machine(binary.LittleEndian.Uint16(head[18:20]))
	case elf.ELFDATA2MSB:
		return elf.Machine(binary.BigEndian.Uint16(head[18:20]))
	}
	return elf.EM_NONE
}

// headWriter keeps the first max bytes written to it.
type headWriter struct {
	b   []byte
	max int
}

func (w *headWriter) Write(p []byte) (int, error) {
	if n := w.max - len(w.b); n > 0 {
		w.b = append(w.b, p[:min(n, len(p))]...)
	}
	return len(p), nil
}
