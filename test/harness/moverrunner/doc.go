// Package moverrunner plays the kubelet for the data mover Jobs of a
// simulated cluster (test/harness/simcluster).
// Test gear: only tests, hack/ and the benchmark import it, never the
// product.
//
// KWOK completes the pod of a Job at once, without running anything. A
// Runner runs the data mover for real where the pod would: the manager
// binary, with the pod's own arguments and environment, its volumes mapped
// to local directories (a claim to the directory ClaimDir gives for its
// namespace and name, a ConfigMap or Secret volume to a directory holding
// its keys, an emptyDir to a scratch directory), against the real storage
// the arguments name. The mover's result, its termination log, then becomes
// the terminated state of the pod's mover container, as the kubelet would
// report it, for the operator to read.
//
// Two ways to use it:
//
//   - RunJob runs the mover of one Job and reports its result on the Job's
//     pod once KWOK has completed it: a test that drives each Job itself.
//   - Watch handles, in the background, every mover pod KWOK completes in the
//     namespaces it is given: each pod once (one that already shows a result
//     is left alone, so a restarted operator or Runner does not run it
//     again), and each new pod of a retried Job again, as a kubelet runs
//     every pod it is given.
package moverrunner
