// Package v1alpha1 contains the live.echo.dev/v1alpha1 API: read-only
// resources the operator computes when they are asked for, served by its
// aggregated API server and never stored in etcd.
// It imports no package of the operator: the live API server
// (internal/liveapi) serves it.
//
//   - EchoRevision: one revision of an Echo's Helm release, read from the
//     release records the operator wrote.
//   - StoredBackup: one backup artifact found in a storage location.
//
// The package is not a CRD: its kinds are served by the operator.
// +kubebuilder:skip
// +kubebuilder:object:generate=true
// +k8s:openapi-gen=true
// +groupName=live.echo.dev
package v1alpha1
