// Package kubectlecho implements the kubectl plugin `kubectl echo`: the
// common tasks of an Echo's life (its status, a backup now, a restore,
// its release history and a rollback, the backups a location holds) as
// commands, each a few reads and at most one write through the user's own
// kubeconfig and RBAC. It must not import controllers or the manager: it
// speaks to the operator only through the Kubernetes API.
package kubectlecho
