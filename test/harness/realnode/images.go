package realnode

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
)

// ImageConfig is what an image says about how it runs.
type ImageConfig struct {
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	User       string            `json:"User,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// WriteImage writes an image archive (docker-archive: manifest.json, the
// config and one layer) to dest, tagged ref, holding files (the image's
// path of each, from a file on this machine) and config. It is how the
// node gets images no registry serves: the pause image, for one.
func WriteImage(dest, ref string, config ImageConfig, files map[string]string) error {
	return WriteImageWithLinks(dest, ref, config, files, nil)
}

// WriteImageWithLinks is WriteImage with symbolic links too: links maps
// each link's path in the image to its target, e.g. /bin/sh to busybox.
func WriteImageWithLinks(dest, ref string, config ImageConfig, files, links map[string]string) error {
	layer, err := layerTar(files, links)
	if err != nil {
		return err
	}
	layerSum := sha256.Sum256(layer)
	cfg, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH, "os": "linux", "config": config,
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(layerSum[:])}},
	})
	if err != nil {
		return err
	}
	cfgSum := sha256.Sum256(cfg)
	cfgName := hex.EncodeToString(cfgSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{ref}, "Layers": []string{"layer.tar"}}})
	if err != nil {
		return err
	}
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for _, e := range []struct {
		name string
		data []byte
	}{{cfgName, cfg}, {"layer.tar", layer}, {"manifest.json", manifest}} {
		if err := writeTarFile(tw, e.name, 0o644, e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dest, out.Bytes(), 0o644)
}

// layerTar is a layer holding files and links, owned by root, with their
// parents.
func layerTar(files, links map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files)+len(links))
	for name := range files {
		names = append(names, name)
	}
	for name := range links {
		names = append(names, name)
	}
	sort.Strings(names)
	dirs := map[string]bool{}
	for _, name := range names {
		for d := path.Dir(name); d != "/" && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d[1:] + "/", Mode: 0o755}); err != nil {
				return nil, err
			}
		}
		if target, ok := links[name]; ok {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name[1:], Linkname: target, Mode: 0o777}); err != nil {
				return nil, err
			}
			continue
		}
		src, err := os.Open(files[name])
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(src)
		_ = src.Close()
		if err != nil {
			return nil, err
		}
		if err := writeTarFile(tw, name[1:], 0o755, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeTarFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
