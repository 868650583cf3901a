package realnode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Binaries are the programs of a node, from `make node`
// (hack/build-node.sh), which passes them as environment variables.
type Binaries struct {
	Kubelet, Containerd, ContainerdShim, Ctr, Runc, Pause string
	// CNIBinDir holds the CNI plugins: bridge, host-local, loopback, portmap.
	CNIBinDir string
	// The cluster's services (Options.ClusterServices), which a node
	// without them does not need: kube-proxy, CoreDNS, local-path-provisioner
	// and the static busybox of its helper pods.
	KubeProxy, CoreDNS, LocalPathProvisioner, Busybox string
}

// binaryEnv maps each binary to its environment variable.
func (b *Binaries) binaryEnv() map[string]*string {
	return map[string]*string{
		"KUBELET": &b.Kubelet, "CONTAINERD": &b.Containerd, "CONTAINERD_SHIM": &b.ContainerdShim,
		"CTR": &b.Ctr, "RUNC": &b.Runc, "PAUSE": &b.Pause, "CNI_BIN_DIR": &b.CNIBinDir,
	}
}

// serviceBinaryEnv maps each binary of the cluster's services to its
// environment variable.
func (b *Binaries) serviceBinaryEnv() map[string]*string {
	return map[string]*string{
		"KUBE_PROXY": &b.KubeProxy, "COREDNS": &b.CoreDNS,
		"LOCAL_PATH_PROVISIONER": &b.LocalPathProvisioner, "BUSYBOX": &b.Busybox,
	}
}

// LocateBinaries reads the binaries' paths from the environment. Those of
// the cluster's services are read when set; Start checks them when it
// needs them.
func LocateBinaries() (Binaries, error) {
	var b Binaries
	for env, p := range b.binaryEnv() {
		if *p = os.Getenv(env); *p == "" {
			return b, fmt.Errorf("$%s is not set: run `make node`, or the tests through make", env)
		}
		if _, err := os.Stat(*p); err != nil {
			return b, fmt.Errorf("$%s: %w", env, err)
		}
	}
	for env, p := range b.serviceBinaryEnv() {
		*p = os.Getenv(env)
	}
	return b, nil
}

// checkServiceBinaries says which binary of the cluster's services is
// missing.
func (b *Binaries) checkServiceBinaries() error {
	for env, p := range b.serviceBinaryEnv() {
		if *p == "" {
			return fmt.Errorf("the cluster's services need $%s: run `make node`, or the tests through make", env)
		}
		if _, err := os.Stat(*p); err != nil {
			return fmt.Errorf("$%s: %w", env, err)
		}
	}
	return nil
}

// Unavailable says why no real node can run here, or is "": it needs
// Linux, root and the tools the node's setup runs (ip, nsenter).
func Unavailable() string {
	if runtime.GOOS != "linux" {
		return "a real node needs Linux"
	}
	if os.Geteuid() != 0 {
		return "a real node needs root (its network, mounts and cgroups)"
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("a real node needs %s on PATH", tool)
		}
	}
	return ""
}

// shimDir is a directory holding the shim alone, put first on containerd's
// PATH: containerd finds its runtime shim by name.
func (n *Node) shimDir() (string, error) {
	dir := n.path("containerd", "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	link := filepath.Join(dir, "containerd-shim-runc-v2")
	_ = os.Remove(link)
	return dir, os.Symlink(n.opts.ContainerdShim, link)
}
