// Package chaos kills the operator at chosen and at random points and
// checks that it converges after a restart. It runs the real manager
// binary, built from this tree, against a simulated cluster
// (test/harness/simcluster) and a real S3 service (test/harness/s3server),
// with the data mover Jobs run for real by test/harness/moverrunner.
// Tests only: nothing imports it; it drives the product through the
// Kubernetes API with test/harness.
//
// # Crash points
//
// Each scenario (install, upgrade, rollback, uninstall, final backup on
// delete, backup, scheduled backup with pruning, restore in place, restore
// into a new Echo) runs in a namespace of its own, watched by a manager of
// its own that reaches the API server through a counting proxy on
// 127.0.0.1 (killProxy). The proxy counts the manager's successful writes
// (POST, PUT, PATCH, DELETE answered 2xx) to the scenario's namespace,
// leaving out Events (recorded asynchronously and aggregated, so their
// number varies from run to run, and no converged state depends on them)
// and Leases (leader election). A recording run counts the W writes the
// scenario takes to converge. Then, for every k in 1..W, a fresh namespace
// runs the scenario again with the proxy armed at k: right after the API
// server has answered the k-th write, and before the answer is passed on,
// the proxy SIGKILLs the manager and waits for it to be gone. The write is
// stored but the manager never learns it was (the hardest case for a
// retry: the operation happened, its author does not know), and nothing
// the dying manager sends after it reaches the API server. A new manager
// is started at once, and the scenario must converge within two minutes:
// see the checks in checks_test.go. Failed writes (a conflict, a refusal)
// change nothing and are not kill points.
//
// # Random kills
//
// A mixed workload (Echoes created, updated and deleted, backups and
// restores, all at once) runs under one manager that is SIGKILLed at
// seeded random times and restarted at once; the same checks hold at the
// end. The seed is logged; CHAOS_SEED=<n> replays it.
//
// # Fast and full runs
//
// By default (go test ./test/chaos) every kill point of install and
// upgrade runs, with a sample of the others and three random kills.
// CHAOS_FULL=1 runs every kill point of every scenario and thirty random
// kills. Scenario runs proceed in parallel up to -parallel (default
// GOMAXPROCS), each with its own manager. A summary line per scenario is
// printed at the end (with -v).
package chaos
