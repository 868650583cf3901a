// Command simcluster runs a simulated cluster (see test/harness/simcluster)
// until interrupted, for running the operator locally:
// A development command: it imports test/harness/simcluster; nothing imports
// it.
//
//	go run ./hack/simcluster --kubeconfig bin/simcluster/kubeconfig --crds config/crd/bases [--nodes N]
//
// It writes an admin kubeconfig to --kubeconfig, prints one line once the
// cluster is ready, and on SIGINT, SIGTERM or SIGHUP stops every component
// and removes that kubeconfig. A terminal's Ctrl-C reaches every process of
// its group, and `make run` (hack/run.sh) then stops simcluster with a
// signal of its own: signals during the teardown are ignored for two
// minutes, so that it completes; one after that ends simcluster at once,
// its child processes with it, and the next start cleans what the node
// left (its containers, mounts, bridge and routes). Component logs stay in
// --work-dir.
//
//	simcluster forward --kubeconfig K --namespace NS --service NAME --port 80 --address 127.0.0.1:8080
//
// forwards a local address to a Service, as `kubectl port-forward svc/NAME`
// does, but picks a ready pod of the Service for each new connection,
// from its EndpointSlices, rather than one pod once: the forward outlives
// rollouts. `make run` forwards to the sample Echo with it.
//
// With --real-node (root on Linux; `make run` chooses it there) the
// cluster's one node is real (test/harness/localcluster): it first builds
// the project's images from the Dockerfile with BuildKit into a registry on
// 127.0.0.1, which the node pulls from, and writes their references to
// --images-env.
package main
