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
// no masquerading and the pods' only route is to PodNetwork through the
// bridge: a pod has no default route. The host gets blackhole routes for
// PodNetwork and ServiceNetwork before anything starts, so an address of
// those ranges that no more specific route serves is dropped instead of
// leaving through the host's default route. Routes are read, never probed.
//
// # What a stop undoes
//
// Stop, and Start before anything else (after a crash), removes everything
// a node leaves behind: the kubelet and containerd, every shim and container
// process (found by containerd's socket and by their cgroups), every mount
// under Root (the kubelet's and the pods' network namespaces, which
// containerd keeps under its state directory), the bridge, the routes, the
// cgroups named for containerd's namespaces, and Root itself; IP forwarding
// goes back to what it was. Of CNI's cache in the host's /var/lib/cni, the
// results of the node's network go too (containerd brings the pods'
// loopback up itself, so the loopback plugin writes none).
//
// Only one node runs on a machine at a time: the names are fixed, and
// Start takes a lock.
package realnode
