// Package managerpolicy keeps the NetworkPolicy of the manager's own pods,
// which the manager creates itself in every install (make deploy, OLM v0
// and v1, operator-sdk run bundle) instead of shipping it as a manifest:
// OLM v1 and OLM releases before operator-registry 1.59 refuse bundles
// that carry a NetworkPolicy. Build is the pure builder; Keeper applies it
// on the leader, owned by the manager's Deployment, so that it goes when
// the Deployment goes (an uninstall). Its RBAC markers are part of the
// ClusterRole manager-role.
// It must not import controllers, cmd or test/: cmd/manager/app wires it.
package managerpolicy
