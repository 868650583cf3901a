// Command simcluster runs a simulated cluster (see test/harness/simcluster)
// until interrupted, for running the operator locally:
// A development command: it imports test/harness/simcluster; nothing imports
// it.
//
//	go run ./hack/simcluster --kubeconfig bin/simcluster/kubeconfig --crds config/crd/bases [--nodes N]
//
// It writes an admin kubeconfig to --kubeconfig, prints one line once the
// cluster is ready, and on SIGINT or SIGTERM stops every component and
// removes that kubeconfig. A second signal kills it at once; its child
// processes still die with it. Component logs stay in --work-dir.
//
// With --real-node (root on Linux; `make run` chooses it there) the
// cluster's one node is real (test/harness/localcluster): it first builds
// the project's images from the Dockerfile with BuildKit into a registry on
// 127.0.0.1, which the node pulls from, and writes their references to
// --images-env.
package main
