package imagebuild

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
)

// ReadArchive reads the first image of a docker-archive, as BuildKit's
// docker exporter and realnode.WriteImage write them: manifest.json names
// the configuration and the layers (plain or gzip tar streams), files of
// the archive. Its Digest is empty.
func ReadArchive(file string) (*Image, error) {
	entries, err := archiveEntries(file)
	if err != nil {
		return nil, err
	}
	var manifest []struct {
		Config string
		Layers []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &manifest); err != nil {
		return nil, fmt.Errorf("%s: manifest.json: %w", file, err)
	}
	if len(manifest) == 0 {
		return nil, fmt.Errorf("%s: no image in its manifest.json", file)
	}
	img := &Image{Files: map[string]File{}}
	config, ok := entries[path.Clean(manifest[0].Config)]
	if !ok {
		return nil, fmt.Errorf("%s: no configuration %s", file, manifest[0].Config)
	}
	if err := json.Unmarshal(config, &img.Config); err != nil {
		return nil, fmt.Errorf("%s: %s: %w", file, manifest[0].Config, err)
	}
	for _, name := range manifest[0].Layers {
		layer, ok := entries[path.Clean(name)]
		if !ok {
			return nil, fmt.Errorf("%s: no layer %s", file, name)
		}
		r, err := decompressed(bytes.NewReader(layer))
		if err != nil {
			return nil, fmt.Errorf("%s: layer %s: %w", file, name, err)
		}
		if err := applyLayer(r, img.Files); err != nil {
			return nil, fmt.Errorf("%s: layer %s: %w", file, name, err)
		}
	}
	return img, nil
}

// archiveEntries are the regular files of a tar archive by name.
func archiveEntries(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	entries := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, h.Name, err)
		}
		entries[path.Clean(h.Name)] = data
	}
}

// decompressed reads r through gzip when it starts as gzip does.
func decompressed(r io.Reader) (io.Reader, error) {
	br := bufio.NewReader(r)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		return gzip.NewReader(br)
	}
	return br, nil
}
