package realnode

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// kubeletConfig is the kubelet's configuration. cgroups are v1 here, with
// no systemd: cgroupfs, no per-QoS hierarchy and no node allocatable
// enforcement. The kubelet serves on the node's address only, and lets
// kube-apiserver (which presents no client certificate in the simulated
// cluster) read logs and exec. Evictions for disk or memory pressure are
// off: a test machine's disk says nothing of the node under test.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://{{socket}}
failSwapOn: false
address: {{nodeIP}}
port: 10250
readOnlyPort: 0
healthzPort: 0
podCIDR: {{podCIDR}}
resolvConf: /dev/null
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard:
  memory.available: "0%"
  nodefs.available: "0%"
  imagefs.available: "0%"
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`

// kubeletDNSConfig points pods at the cluster's DNS, with ClusterServices.
const kubeletDNSConfig = `clusterDomain: {{domain}}
clusterDNS: [{{dns}}]
`

// startKubelet writes the kubelet's configuration and starts it.
func (n *Node) startKubelet() error {
	config := kubeletConfig
	if n.opts.ClusterServices {
		config += kubeletDNSConfig
	}
	config = strings.NewReplacer("{{socket}}", n.containerd, "{{nodeIP}}", NodeIP, "{{podCIDR}}", PodCIDR,
		"{{domain}}", ClusterDomain, "{{dns}}", ClusterDNSIP).Replace(config)
	file := n.path("kubelet", "config.yaml")
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		return err
	}
	err := n.startProcess("kubelet", []string{"PATH=" + os.Getenv("PATH")}, n.opts.Kubelet,
		"--config="+file,
		"--kubeconfig="+n.opts.Kubeconfig,
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP,
		"--root-dir="+n.path("kubelet", "root"),
		"--cert-dir="+n.path("kubelet", "pki"),
		"--node-labels=echo.dev/real-node=true",
	)
	if err != nil {
		return fmt.Errorf("starting the kubelet: %w", err)
	}
	return nil
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", kubeconfig)
}
