// Package simcluster starts a simulated Kubernetes cluster from real
// binaries, for the operator's tests and for running it locally: etcd and
// kube-apiserver (through controller-runtime's envtest), kube-controller-manager,
// kube-scheduler, and KWOK standing in for the kubelets of fake nodes.
// The binaries come from hack/build-control-plane.sh (`make control-plane`);
// see LocateBinaries. The package runs on Unix systems only.
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
//
// Everything listens on 127.0.0.1 only, on ports chosen at start, so several
// clusters can run side by side: etcd (client and peer port) and
// kube-apiserver (one TLS port). kube-controller-manager and kube-scheduler
// run with --secure-port=0 and KWOK without a server address, so they open
// no port. Each component logs to <WorkDir>/<name>.log. The processes run in
// their own process groups; on Linux the kernel kills the ones this package
// starts when the parent dies, and a small reaper process kills all of them
// (etcd and kube-apiserver included) and removes their state if the parent
// goes away without calling Stop.
//
// # What runs and what does not
//
// No container ever runs. KWOK plays the kubelet through its "fast" stages:
//   - node-initialize and node-heartbeat: nodes become Ready and stay so;
//   - pod-ready: a scheduled pod goes straight to Running and Ready, with an
//     IP from its node's pod CIDR; init containers count as completed and
//     readiness gates as true; probes are never run;
//   - pod-complete: a Running pod that has an owner reference of kind Job
//     becomes Succeeded (exit code 0) at once. Nothing else needs to be set
//     on a Job's pod; pods not owned by a Job (bare pods, Deployments,
//     StatefulSets, DaemonSets) stay Running forever, and no pod ever fails
//     on its own. The Job pods of Options.HeldJobPodNamespaces are the
//     exception: they stay Running until a test annotates each with the
//     exit code (JobPodExitCodeAnnotation), termination message and
//     DisruptionTarget reason it is to end with, as a kubelet reports a
//     container's success, failure or eviction;
//   - pod-delete: a pod marked for deletion is removed at once (finalizers
//     dropped), so there is no graceful termination period.
//
// kube-controller-manager runs every controller but the node-lifecycle,
// node-ipam and cloud ones, so there are no not-ready taints or evictions.
// The fake nodes (kwok-node-0, kwok-node-1, ...) have no taints, the labels
// type=kwok, kubernetes.io/hostname, kubernetes.io/os=linux,
// kubernetes.io/arch and topology.kubernetes.io/zone (zone-a, zone-b,
// zone-c in turn), and 32 CPUs, 256Gi of memory and room for 1000 pods each.
// There is no pod network, no kube-proxy and no DNS: Services get
// EndpointSlices with the pods' made-up IPs, but nothing answers on them,
// and exec, logs and port-forward do not work.
//
// Unlike plain envtest, the ServiceAccount admission plugin is on: a pod
// naming a missing ServiceAccount is rejected, as in a real cluster. A pod
// created directly right after its namespace may be rejected until the
// serviceaccount controller has created the namespace's "default" account
// (within milliseconds); workload controllers simply retry.
//
// # Aggregation layer
//
// kube-apiserver serves the aggregation layer as under kubeadm: it has a
// front-proxy CA and client certificate (FrontProxyClientName) of its own
// and the --requestheader-* and --proxy-client-* flags, and publishes the
// CA and header names in kube-system/extension-apiserver-authentication.
// --enable-aggregator-routing is off, so an APIService may point at an
// ExternalName Service whose externalName is 127.0.0.1: the aggregator
// then dials 127.0.0.1 at the APIService's port, where an extension server
// running out of the cluster listens. (Endpoints and EndpointSlices may
// not hold a loopback address.) The server's certificate must be valid
// for <service>.<namespace>.svc.
//
// # Volumes
//
// Without Options.DefaultStorageClass there is no StorageClass and no
// provisioner: a PersistentVolumeClaim stays Pending, and so does a pod
// using it, unless a matching PersistentVolume is created by hand (the
// persistentvolume-binder controller binds it then). With
// DefaultStorageClass the default class "standard" (provisioner
// kwok.x-k8s.io/volume, immediate binding, reclaim policy Delete) exists,
// and KWOK's volume stages create a hostPath PersistentVolume for each of
// its claims, bind both, and delete the volume when the claim is deleted.
// Nothing is written to the host path.
//
// # Restarting components
//
// A test can take any component down and bring it back while the rest of
// the cluster runs (restart.go): StopComponent stops one as Stop would
// (SIGTERM, SIGKILL after 10s), KillComponent SIGKILLs it, StartComponent
// starts it again and RestartComponent does both, gracefully. Components
// are named by the Component constants (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok). A component comes back
// with the same command line: etcd on the same ports and data directory,
// kube-apiserver on the same port with the same serving certificate, client
// CA and service-account keys, so the admin kubeconfig, Config() and every
// component's client keep working, and nothing stored is lost. Restarted
// processes are tracked like the first ones: their pid files are rewritten
// for the reaper, and the ones this package starts itself get the
// parent-death signal.
//
// StartComponent returns once the component serves: for etcd and
// kube-apiserver, once kube-apiserver's /readyz passes (etcd's /health if
// kube-apiserver is down); the other three open no port and are only
// started. On SIGTERM kube-apiserver drains the requests in flight, then
// gives open watches 2 seconds (--shutdown-send-retry-after), so it stops
// in about 2 seconds; etcd takes about 7 while kube-apiserver watches it,
// against milliseconds for a kill. Calls of these methods take turns; none
// may run concurrently with Stop.
package simcluster
