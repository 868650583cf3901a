package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// PauseImage is the sandbox image, of the pause binary (NodeImages).
const PauseImage = "localhost/echo-realnode/pause:latest"

// containerdConfig is containerd's configuration: state under the node's
// root, the CRI plugin with runc, the pause image and the CNI bridge; the
// network namespaces of pods under the state directory, so a stop finds
// them; nothing on host paths.
const containerdConfig = `version = 3
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.opt"]
root = "{{root}}/containerd/root"
state = "{{root}}/containerd/state"
[grpc]
  address = "{{socket}}"
# The streams of exec, attach and port-forward, on the node's address: a
# random port on loopback could take one another test chose.
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "{{nodeIP}}"
  stream_server_port = "0"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "{{pause}}"
[plugins.'io.containerd.cri.v1.runtime']
  # The host lacks CAP_SYS_RESOURCE: containers may only raise their OOM score.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "{{runc}}"
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["{{cni}}"]
    conf_dir = "{{root}}/cni"
    # containerd brings each pod's loopback up itself: the loopback
    # plugin would leave its results in the host's /var/lib/cni.
    use_internal_loopback = true
`

// startContainerd writes containerd's configuration, starts it and waits
// for its socket to answer.
func (n *Node) startContainerd(ctx context.Context) error {
	config := strings.NewReplacer("{{root}}", n.opts.Root, "{{socket}}", n.containerd,
		"{{pause}}", PauseImage, "{{nodeIP}}", NodeIP, "{{runc}}", n.opts.Runc, "{{cni}}", n.opts.CNIBinDir).Replace(containerdConfig)
	file := n.path("containerd", "config.toml")
	if hosts := n.registryHosts(); len(hosts) > 0 {
		dir := n.path("containerd", "certs.d")
		config += registryConfig(dir)
		if err := writeRegistryHosts(dir, hosts); err != nil {
			return err
		}
	}
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		return err
	}
	shims, err := n.shimDir()
	if err != nil {
		return err
	}
	env := []string{"PATH=" + shims + ":" + os.Getenv("PATH")}
	if err := n.startProcess("containerd", env, n.opts.Containerd, "--config", file); err != nil {
		return fmt.Errorf("starting containerd: %w", err)
	}
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if n.exited() != "" {
			return false, fmt.Errorf("containerd exited (logs in %s)", n.LogDir())
		}
		return n.ctr(ctx, "version") == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for containerd: %w", err)
	}
	return nil
}

// importImages imports the NodeImages, from Options.ImageArchives or
// written from their binaries, and Options.Images into the CRI plugin's
// namespace.
func (n *Node) importImages(ctx context.Context) error {
	var archives []string
	for _, im := range n.opts.NodeImages() {
		archive, ok := n.opts.ImageArchives[im.Ref]
		if !ok {
			archive = n.path("containerd", im.Target+".tar")
			if err := WriteImageWithLinks(archive, im.Ref, im.Config, im.Files, im.Links); err != nil {
				return fmt.Errorf("writing the image %s: %w", im.Ref, err)
			}
		}
		archives = append(archives, archive)
	}
	for _, archive := range append(archives, n.opts.Images...) {
		if err := n.ctr(ctx, "images", "import", archive); err != nil {
			return fmt.Errorf("importing %s: %w", archive, err)
		}
	}
	return nil
}

// ctr runs ctr against the node's containerd, in the CRI namespace.
func (n *Node) ctr(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, n.opts.Ctr, append([]string{"--address", n.containerd, "--namespace", containerdNamespace}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// registryConfig points the CRI plugin at a directory of registry hosts.
func registryConfig(dir string) string {
	return fmt.Sprintf("[plugins.'io.containerd.cri.v1.images'.registry]\n  config_path = %q\n", dir)
}

// registryHosts are the contents of containerd's hosts.toml by registry
// (certs.d/<host>/hosts.toml; _default for every other registry), from
// Options.HTTPRegistries, TLSRegistries and Mirror.
func (n *Node) registryHosts() map[string]string {
	hosts := map[string]string{}
	for _, host := range n.opts.HTTPRegistries {
		hosts[host] = hostsTOML("http://"+host, "")
	}
	for host, ca := range n.opts.TLSRegistries {
		hosts[host] = hostsTOML("https://"+host, ca)
	}
	if n.opts.Mirror != "" {
		hosts["_default"] = hostsTOML("http://"+n.opts.Mirror, "")
	}
	return hosts
}

// hostsTOML is a hosts.toml that pulls and resolves at server only,
// trusting ca when set.
func hostsTOML(server, ca string) string {
	toml := fmt.Sprintf("server = %q\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", server, server)
	if ca != "" {
		toml += fmt.Sprintf("  ca = %q\n", ca)
	}
	return toml
}

// writeRegistryHosts writes dir/<host>/hosts.toml for each of hosts.
func writeRegistryHosts(dir string, hosts map[string]string) error {
	for host, toml := range hosts {
		if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(toml), 0o644); err != nil {
			return err
		}
	}
	return nil
}
