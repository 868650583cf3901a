package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
)

// OCI media types of the image served.
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// bundleImage is a bundle directory packed as the image bundle.Dockerfile
// builds: one layer holding the directory's files at the root, and the
// annotations of its metadata/annotations.yaml as labels.
type bundleImage struct {
	manifest []byte
	blobs    map[string][]byte // config and layer, by digest
}

func digestOf(b []byte) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(b))
}

func packBundle(dir string, labels map[string]string) (*bundleImage, error) {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	err := fs.WalkDir(os.DirFS(dir), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == "." {
			return err
		}
		h := &tar.Header{Name: path + "/", Mode: 0o755, Typeflag: tar.TypeDir}
		var data []byte
		if !d.IsDir() {
			if data, err = os.ReadFile(filepath.Join(dir, path)); err != nil {
				return err
			}
			h = &tar.Header{Name: path, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(data))}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("packing %s: %w", dir, err)
	}
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"config":       map[string]any{"Labels": labels},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{digestOf(layer.Bytes())}},
	})
	if err != nil {
		return nil, err
	}
	img := &bundleImage{blobs: map[string][]byte{digestOf(layer.Bytes()): layer.Bytes(), digestOf(config): config}}
	descriptor := func(mediaType string, b []byte) map[string]any {
		return map[string]any{"mediaType": mediaType, "digest": digestOf(b), "size": len(b)}
	}
	img.manifest, err = json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeManifest,
		"config":        descriptor(mediaTypeConfig, config),
		"layers":        []any{descriptor(mediaTypeLayer, layer.Bytes())},
	})
	return img, err
}

// registry serves one image, read-only, under the repository repo and the
// tag tag, as the registry API (distribution spec) pulls it. It records
// whether the image's manifest was read.
type registry struct {
	repo, tag string
	img       *bundleImage
	pulled    atomic.Bool
}

func (r *registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, "read-only", http.StatusMethodNotAllowed)
		return
	}
	path := strings.TrimPrefix(req.URL.Path, "/v2/")
	var body []byte
	contentType := "application/octet-stream"
	switch {
	case path == "" || path == "/v2":
		body, contentType = []byte("{}"), "application/json"
	case path == r.repo+"/manifests/"+r.tag || path == r.repo+"/manifests/"+digestOf(r.img.manifest):
		body, contentType = r.img.manifest, mediaTypeManifest
		r.pulled.Store(true)
	case strings.HasPrefix(path, r.repo+"/blobs/"):
		body = r.img.blobs[strings.TrimPrefix(path, r.repo+"/blobs/")]
	}
	if body == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintf(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"only %s:%s is served here"}]}`, r.repo, r.tag)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Docker-Content-Digest", digestOf(body))
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	if req.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}
