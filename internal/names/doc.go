// Package names derives the deterministic names of the objects the operator
// creates for another: a name is a lock against a stale cache, so it must be
// the same on every reconcile and fit a label value.
//
// It imports nothing of the operator.
// Imported by controllers, internal/finalbackup and internal/kubectlecho:
// the latter two for the final backup's name and a copy Job's name.
package names
