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
package main
