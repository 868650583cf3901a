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

// NodeImage is an image the node runs besides the workloads': the pod
// sandbox (pause) and the cluster's services. hack/images/node.Dockerfile
// builds each from the same binaries, as the stage Target, with the build
// context holding Files under a directory named after the stage; the node
// imports BuildKit's archive of it when Options.ImageArchives has one, and
// otherwise writes the same image itself (WriteImageWithLinks), for a node
// with no builder beside it. test/harness/imagebuild's tests check that
// both hold the same files and configuration.
type NodeImage struct {
	// Ref is the reference the node's manifests run it by.
	Ref string
	// Target is its stage in hack/images/node.Dockerfile.
	Target string
	Config ImageConfig
	// Files are its files: the path in the image of each, from a file on
	// this machine.
	Files map[string]string
	// Links are its symbolic links: the path of each, to its target.
	Links map[string]string
}

// dockerfilePath is the environment of an image a Dockerfile builds when it
// sets none: the PATH its frontend gives every Linux image.
var dockerfilePath = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

// NodeImageDockerfile is the Dockerfile of the NodeImages, relative to
// the repository's root.
const NodeImageDockerfile = "hack/images/node.Dockerfile"

// NodeImages are the images a node with these options runs: pause, and
// the cluster services' with ClusterServices.
func (o *Options) NodeImages() []NodeImage {
	images := []NodeImage{{Ref: PauseImage, Target: "pause",
		Config: ImageConfig{Entrypoint: []string{"/pause"}, User: "65535:65535", Env: dockerfilePath},
		Files:  map[string]string{"/pause": o.Pause}}}
	if !o.ClusterServices {
		return images
	}
	return append(images,
		NodeImage{Ref: CoreDNSImage, Target: "coredns",
			Config: ImageConfig{Entrypoint: []string{"/coredns"}, User: nonRoot, Env: dockerfilePath},
			Files:  map[string]string{"/coredns": o.CoreDNS}},
		NodeImage{Ref: ProvisionerImage, Target: "local-path-provisioner",
			Config: ImageConfig{Entrypoint: []string{"/local-path-provisioner"}, User: nonRoot, Env: dockerfilePath},
			Files:  map[string]string{"/local-path-provisioner": o.LocalPathProvisioner}},
		NodeImage{Ref: HelperImage, Target: "busybox",
			Config: ImageConfig{Entrypoint: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}},
			Files:  map[string]string{"/bin/busybox": o.Busybox},
			Links:  map[string]string{"/bin/sh": "busybox", "/bin/mkdir": "busybox", "/bin/rm": "busybox"}},
	)
}

// WriteImage writes an image archive (docker-archive: manifest.json, the
// config and one layer) to dest, tagged ref, holding files (the image's
// path of each, from a file on this machine) and config. It is how a node
// with no builder beside it gets its NodeImages.
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
