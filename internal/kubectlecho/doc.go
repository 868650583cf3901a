// Package kubectlecho implements the kubectl plugin `kubectl echo`: the
// common tasks of an Echo's life (its status, a backup now, a restore,
// its release history and a rollback, the backups a location holds) as
// commands, each a few reads and at most one write through the user's own
// kubeconfig and RBAC. It must not import controllers or the manager: it
// speaks to the operator only through the Kubernetes API.
//
// The text it prints is for people and terminal-safe (terminal.go); for
// scripts, -o prints the objects through cli-runtime's printers
// (output.go), --wait follows a backup, restore or rollback to its end
// (wait.go), restore --dry-run says what a restore would do and why it
// would fail (restorepreview.go), and the shells complete the names of
// the namespace's objects (completion.go).
package kubectlecho
