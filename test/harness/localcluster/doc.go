// Package localcluster starts a local cluster whose node is real: the
// simulated control plane (test/harness/simcluster) without fake nodes,
// listening on the address of a real node (test/harness/realnode) that
// joins it with its cluster services (kube-proxy, CoreDNS,
// local-path-provisioner). The real-node suites and `make run` use it;
// the suites also share their TestMain through it: why they skip
// (SkipReason), their directories and binaries (SuiteDirs,
// LocateBinaries), set-up, tests and tear-down (RunSuite), and their logs
// kept after a failure (KeepLogsOnFailure).
// Test gear: only tests and hack/ import it, never the product.
package localcluster
