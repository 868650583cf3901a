package servingcert

import (
	"context"
	"encoding/json"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnerClusterRole owns the live API's APIService, so that no uninstall
// leaves it behind: an APIService that points at nothing keeps every
// namespace of the cluster from being deleted. It is the role that lets
// users read the live resources (config/rbac/echo_viewer_role.yaml),
// which every install creates under this name (make deploy's namePrefix,
// the bundle's manifest for OLM v0, OLM v1 and operator-sdk run bundle)
// and every uninstall deletes: make undeploy; OLM v1 with its
// ClusterExtension; OLM v0, and so operator-sdk cleanup, with the CSV,
// whose label it carries (and docs/install.md's uninstall deletes the
// roles of that label). Once it is gone, kube-controller-manager's
// garbage collector deletes the APIService. The APIService is
// cluster-scoped, so its owner must be too: a namespaced owner, the
// manager's Deployment, could not own it.
const OwnerClusterRole = "echo-operator-echo-viewer-role"

// Reading the owner's UID, by name.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,resourceNames=echo-operator-echo-viewer-role,verbs=get

// ownerReference is a reference to the ClusterRole name as it is now
// (its UID), read from the API server. It blocks no deletion, which would
// need the right to update the role's finalizers.
func ownerReference(ctx context.Context, reader client.Reader, name string) (metav1.OwnerReference, error) {
	role := &rbacv1.ClusterRole{}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, role); err != nil {
		if apierrors.IsNotFound(err) {
			return metav1.OwnerReference{}, fmt.Errorf("ClusterRole %s, which owns the live API's APIService, does not exist: the operator is being uninstalled, or was installed without it: %w", name, err)
		}
		return metav1.OwnerReference{}, fmt.Errorf("reading ClusterRole %s, which owns the live API's APIService: %w", name, err)
	}
	return metav1.OwnerReference{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole", Name: role.Name, UID: role.UID}, nil
}

// withOwner is refs with owner in place of any reference to a ClusterRole
// of its name (an earlier role's, of another UID), and whether that
// changed refs.
func withOwner(refs []metav1.OwnerReference, owner metav1.OwnerReference) ([]metav1.OwnerReference, bool) {
	out := []metav1.OwnerReference{owner}
	changed := true
	for _, ref := range refs {
		switch {
		case ref == owner:
			changed = false
		case ref.Kind == owner.Kind && ref.APIVersion == owner.APIVersion && ref.Name == owner.Name:
		default:
			out = append(out, ref)
		}
	}
	return out, changed || len(out) != len(refs)
}

// ensureOwner gives apiService the owner reference owner, unless it has
// it. The patch carries no resourceVersion: kube-apiserver writes the
// APIService's status all the time, and the owner references written are
// those read, with the owner's in place of an earlier one of its name.
func ensureOwner(ctx context.Context, c client.Client, apiService *unstructured.Unstructured, owner metav1.OwnerReference) (bool, error) {
	refs, changed := withOwner(apiService.GetOwnerReferences(), owner)
	if !changed {
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs}})
	if err != nil {
		return false, err
	}
	if err := c.Patch(ctx, apiService, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return false, fmt.Errorf("making ClusterRole %s the owner of APIService %s: %w", owner.Name, apiService.GetName(), err)
	}
	return true, nil
}
