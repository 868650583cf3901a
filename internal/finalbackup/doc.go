// Package finalbackup is the contract between the controller that takes an
// Echo's final backup (controllers/echo_finalbackup.go) and the uninstall
// gate of its release (internal/helmreconciler/uninstallgate.go): whether
// an Echo being deleted wants one, what it is called, which EchoBackup of
// that name is it (Foreign), and when the deletion may go on.
//
// Both sides read the Echo's spec as it stood when it was deleted, and the
// backup itself; neither relies on a finalizer added after the spec
// changed. Kubernetes accepts no new finalizer once the deletion has begun,
// so a final backup turned on a moment before the delete would otherwise
// be skipped by timing. What holds the Echo meanwhile is the Helm
// reconciler's own finalizer, added before the release is installed and
// removed only once the gate lets the uninstall through.
//
// It imports only the API types and internal/names.
// Imported by controllers and internal/helmreconciler.
package finalbackup
