// Package servingcert keeps the live API's serving certificate when no one
// else does (both installs; --live-api-cert-dir takes a mounted one
// instead): a private CA and a certificate it signs, both in one Secret of
// the operator's namespace. The leader issues and renews them (Rotator)
// and writes the CA into the APIService's caBundle, which kube-apiserver
// verifies the live API against; with a Service to point it at, it
// registers that APIService itself, and removes it when the operator runs
// with the live API off (Unregisterer). The APIService is owned by the
// ClusterRole OwnerClusterRole (owner.go), which every uninstall deletes,
// so the garbage collector deletes it too. Every replica serves the
// certificate from the Secret as it changes (SecretProvider). Its RBAC
// markers are those of the ClusterRole live-api-role.
// It must not import controllers, cmd or test/: they build on it.
package servingcert
