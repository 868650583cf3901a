// Package v1alpha1 contains the echo.dev/v1alpha1 API: Echo, and the
// EchoBackup, EchoBackupSchedule, EchoRestore and EchoBackupLocation kinds.
// It imports no package of the operator: everything else builds on it.
//
// +kubebuilder:object:generate=true
// +groupName=echo.dev
package v1alpha1
