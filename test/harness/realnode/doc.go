// Package realnode runs a real node beside a simulated control plane: a
// kubelet, containerd and runc that run pods as containers, on a CNI bridge
// whose addresses exist only on this machine.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
//
// # Network
//
// Pods live on the bridge Bridge, whose address, the first of PodCIDR, is
// also the node's InternalIP, so kube-apiserver reaches the kubelet (logs,
// exec, port-forward) without leaving the machine. The bridge plugin adds
// no masquerading and the pods' only routes are to PodNetwork and
// ServiceNetwork through the bridge: a pod has no default route. The host
// gets blackhole routes for ServiceNetwork, and for PodNetwork when it is
// wider than the bridge's subnet, before anything starts, so an address of
// those ranges that no more specific route serves is dropped instead of
// leaving through the host's default route. A local cluster's pod network
// is the bridge's subnet (PodCIDR) alone: the host's own addresses in the
// simulated cluster's wide pod range, such as its resolver, stay its own.
// Routes are read, never probed.
//
// Pods reach kube-apiserver as in any cluster, through the "kubernetes"
// Service with their in-cluster configuration: Prepare brings the bridge
// up before the control plane starts, so kube-apiserver can listen on
// NodeIP (simcluster.Options.ServeAddress), the Service's endpoint, with a
// certificate that names the Service.
//
// # Cluster services
//
// With Options.ClusterServices the node is a working cluster node, and
// Start returns once every service is up. Start then writes and imports
// some 100 MB of images more and waits for kube-proxy and two more pods
// (9 to 13 seconds in all on 2 cores): the option keeps that off the tests
// that need a pod only.
//
//   - kube-proxy runs on the host beside the kubelet, in nftables mode
//     (tables "ip kube-proxy" and "ip6 kube-proxy"), with no conntrack
//     setting so it writes no sysctl, its health and metrics servers on
//     NodeIP. A pod's packet to a ClusterIP reaches the host through the
//     bridge and is DNATed in prerouting to an endpoint. The host itself
//     cannot reach ClusterIPs: its route for ServiceNetwork is a blackhole.
//   - CoreDNS runs as a restricted pod (Deployment coredns in kube-system,
//     port 1053, the kube-dns Service at ClusterDNSIP mapping 53 to it),
//     Ready through its ready plugin; the kubelet gives pods ClusterDNSIP
//     and ClusterDomain. It answers cluster.local and the reverse zones
//     from the API and NXDOMAIN for every other name: it forwards nothing,
//     as an upstream resolver would take queries off the machine, and no
//     test needs a name outside the cluster.
//   - local-path-provisioner runs as a restricted pod in StorageNamespace
//     and serves StorageClass, the default (WaitForFirstConsumer, local
//     PersistentVolumes, so a pod's fsGroup owns them), with directories
//     under VolumeDir, inside Root. Its helper pods, which create and
//     remove those directories as root through a hostPath volume, run in
//     StorageNamespace too, which enforces the privileged level for them.
//
// Their images and the pause image (NodeImages: CoreDNS and the
// provisioner as non-root static binaries, the helper's from Debian's
// static busybox) are the stages of hack/images/node.Dockerfile, imported
// before the kubelet starts: BuildKit's archives of them when
// Options.ImageArchives has them, else written from the same binaries.
//
// # What a stop undoes
//
// Stop, and Start before anything else (after a crash), removes everything
// a node leaves behind: the kubelet, kube-proxy and containerd, every shim
// and container process (found by containerd's socket and by their
// cgroups), every mount under Root (the kubelet's and the pods' network
// namespaces, which containerd keeps under its state directory),
// kube-proxy's nftables tables, the bridge, the routes, the cgroups named
// for containerd's namespaces, and Root itself with the provisioned
// volumes; IP forwarding goes back to what it was. Of CNI's cache in the host's /var/lib/cni, the
// results of the node's network go too (containerd brings the pods'
// loopback up itself, so the loopback plugin writes none).
//
// Only one node runs on a machine at a time: the names are fixed, and
// Start takes a lock.
package realnode
