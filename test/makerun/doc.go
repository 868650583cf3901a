// Package makerun runs `make run` as a user does, hack/run.sh in a process
// group of its own as a terminal starts it: it waits for the sample Echo
// to answer the printed curl command, changes the Echo and checks that the
// same command answers from the new pods, then sends SIGINT to the whole
// group, as Ctrl-C does, and checks that nothing of the run is left on the
// host: no process, mount, bridge or route.
//
// It runs where a real node can (root on Linux) and skips elsewhere with a
// line that says why. Test gear: nothing imports it.
package makerun
