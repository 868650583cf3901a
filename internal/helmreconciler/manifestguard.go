package helmreconciler

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/kube"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// manifestGuard confines what one release may touch: objects of the
// chart's kinds, in the namespace of the object the release belongs to.
//
// The release records are authenticated (see releasetrust), so a manifest
// the operator acts on is one it rendered itself. The guard is the second
// wall: whatever a manifest says, from a chart change or a leaked key, the
// operator never creates, patches or deletes anything else on a release's
// behalf, on install, upgrade, rollback, uninstall or drift repair.
type manifestGuard struct {
	namespace string
	kinds     map[schema.GroupKind]bool
}

func newManifestGuard(namespace string, kinds map[schema.GroupVersionKind]bool) manifestGuard {
	g := manifestGuard{namespace: namespace, kinds: map[schema.GroupKind]bool{}}
	for k := range kinds {
		g.kinds[k.GroupKind()] = true
	}
	return g
}

// check refuses an object outside the release's namespace or of a kind
// the chart does not render. An object of a namespaced kind that names no
// namespace is placed in the release's namespace by every caller first.
func (g manifestGuard) check(gk schema.GroupKind, namespaced bool, namespace, name string) error {
	if g.kinds[gk] && namespaced && namespace == g.namespace {
		return nil
	}
	return &UnsafeManifestError{Kind: gk.String(), Namespace: namespace, Name: name, ReleaseNamespace: g.namespace, Allowed: g.allowed()}
}

func (g manifestGuard) allowed() string {
	out := make([]string, 0, len(g.kinds))
	for gk := range g.kinds {
		out = append(out, gk.String())
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// UnsafeManifestError says that a release manifest lists an object the
// release may not touch. Nothing of such a manifest is applied or deleted.
type UnsafeManifestError struct {
	Kind, Namespace, Name string
	ReleaseNamespace      string
	Allowed               string
}

func (e *UnsafeManifestError) Error() string {
	where := "cluster-wide"
	if e.Namespace != "" {
		where = "in namespace " + e.Namespace
	}
	return fmt.Sprintf("the release manifest lists %s %s %s, but a release may only hold %s in namespace %s: nothing of it was applied",
		e.Kind, e.Name, where, e.Allowed, e.ReleaseNamespace)
}

// guardedKubeClient is the Kubernetes client of Helm's actions for one
// release. Every list of objects Helm creates, updates or deletes comes
// from Build, which refuses a manifest that leaves the guard's bounds; and
// an object is only deleted when its live copy is controlled by the
// release's owner, so a name in a manifest is never enough to delete what
// someone else made.
type guardedKubeClient struct {
	*kube.Client
	guard manifestGuard
	owner types.UID
	// live reads the object about to be deleted from the API server: the
	// action's own client answers from the cache (cachedReads), which
	// before a first install reports any object it does not hold as
	// missing, and another workload's object of the release's name (a
	// claim without the chart's labels, say) would be taken for one
	// already gone, and deleted.
	live client.Reader
	log  func(msg string, keysAndValues ...any)
}

// IsReachable answers without asking the API server: Helm calls it
// before every install and upgrade only to fail early, and the operator,
// which has just read the object from its watch, learns of an unreachable
// API server from the action's first request all the same.
func (*guardedKubeClient) IsReachable() error { return nil }

// Build implements kube.Interface.
func (c *guardedKubeClient) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	list, err := c.Client.Build(reader, validate)
	if err != nil {
		return nil, err
	}
	for _, info := range list {
		namespaced := info.Mapping.Scope.Name() == meta.RESTScopeNameNamespace
		if err := c.guard.check(info.Mapping.GroupVersionKind.GroupKind(), namespaced, info.Namespace, info.Name); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// Update implements kube.Interface: what the previous revision holds and
// this one does not is deleted only if the owner controls it.
func (c *guardedKubeClient) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	return c.Client.Update(c.ownedOrKept(original, target), target, force)
}

// UpdateThreeWayMerge implements kube.InterfaceThreeWayMerge.
func (c *guardedKubeClient) UpdateThreeWayMerge(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	return c.Client.UpdateThreeWayMerge(c.ownedOrKept(original, target), target, force)
}

// Delete implements kube.Interface.
func (c *guardedKubeClient) Delete(resources kube.ResourceList) (*kube.Result, []error) {
	return c.Client.Delete(c.owned(resources))
}

// DeleteWithPropagationPolicy implements kube.InterfaceDeletionPropagation.
func (c *guardedKubeClient) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	return c.Client.DeleteWithPropagationPolicy(c.owned(resources), policy)
}

// ownedOrKept drops from original the objects an update would delete
// (those target does not hold) unless the owner controls them.
func (c *guardedKubeClient) ownedOrKept(original, target kube.ResourceList) kube.ResourceList {
	doomed := original.Difference(target)
	if len(doomed) == 0 {
		return original
	}
	keep := c.owned(doomed)
	return original.Filter(func(info *resource.Info) bool {
		return target.Contains(info) || keep.Contains(info)
	})
}

// owned keeps the objects whose live copy is controlled by the owner, and
// those already gone (deleting them is a no-op Helm expects to make).
func (c *guardedKubeClient) owned(resources kube.ResourceList) kube.ResourceList {
	return resources.Filter(func(info *resource.Info) bool {
		obj, err := c.liveMetadata(info)
		if apierrors.IsNotFound(err) {
			return true
		}
		if err != nil {
			c.log("Not deleting an object whose owner could not be read", "kind", info.Mapping.GroupVersionKind.Kind, "name", info.Name, "error", err.Error())
			return false
		}
		if ref := metav1.GetControllerOf(obj); ref != nil && ref.UID == c.owner {
			return true
		}
		c.log("Not deleting an object the release's owner does not control", "kind", info.Mapping.GroupVersionKind.Kind, "name", info.Name, "namespace", info.Namespace)
		return false
	})
}

// liveMetadata reads the metadata of info's object from the API server
// (live), never from the cache.
func (c *guardedKubeClient) liveMetadata(info *resource.Info) (*metav1.PartialObjectMetadata, error) {
	ctx, cancel := context.WithTimeout(context.Background(), liveReadTimeout)
	defer cancel()
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(info.Mapping.GroupVersionKind)
	return obj, c.live.Get(ctx, client.ObjectKey{Namespace: info.Namespace, Name: info.Name}, obj)
}

// liveReadTimeout bounds one read of liveMetadata.
const liveReadTimeout = 30 * time.Second
