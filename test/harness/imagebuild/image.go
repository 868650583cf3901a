package imagebuild

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
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
}

const (
	mediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerIndex    = "application/vnd.docker.distribution.manifest.list.v2+json"
)

// ReadImage reads the image repo:tag from the registry at host (plain
// HTTP): for an index, its manifest for this machine's platform.
func ReadImage(ctx context.Context, host, repo, tag string) (*Image, error) {
	c := registryClient{host: host, repo: repo, http: &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{Proxy: nil}}}
	var manifest ocispec.Manifest
	digest, mediaType, body, err := c.manifest(ctx, tag)
	if err != nil {
		return nil, err
	}
	if mediaType == ocispec.MediaTypeImageIndex || mediaType == mediaTypeDockerIndex {
		if digest, err = platformManifest(body); err != nil {
			return nil, fmt.Errorf("%s/%s:%s: %w", host, repo, tag, err)
		}
		if _, _, body, err = c.manifest(ctx, digest); err != nil {
			return nil, err
		}
	}
	if err := json.Unmarshal(body, &manifest); err != nil {
		return nil, fmt.Errorf("decoding the manifest of %s/%s:%s: %w", host, repo, tag, err)
	}
	img := &Image{Digest: digest, Files: map[string]File{}}
	config, err := c.blob(ctx, manifest.Config.Digest.String())
	if err != nil {
		return nil, err
	}
	err = json.NewDecoder(config).Decode(&img.Config)
	_ = config.Close()
	if err != nil {
		return nil, fmt.Errorf("decoding the configuration of %s/%s:%s: %w", host, repo, tag, err)
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
				sum := sha256.New()
				if _, err := io.Copy(sum, tr); err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				f.SHA256 = hex.EncodeToString(sum.Sum(nil))
			}
			files[name] = f
		}
	}
}
