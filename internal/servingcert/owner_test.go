package servingcert

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/echo-operator/echo-operator/test/harness/controlplane"
	"github.com/echo-operator/echo-operator/test/harness/reporoot"
)

func TestWithOwner(t *testing.T) {
	owner := metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: OwnerClusterRole, UID: "uid-2"}
	earlier := owner
	earlier.UID = "uid-1"
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "Namespace", Name: "somebody", UID: "uid-9"}
	for _, tc := range []struct {
		name        string
		refs        []metav1.OwnerReference
		want        []metav1.OwnerReference
		wantChanged bool
	}{
		{name: "none", want: []metav1.OwnerReference{owner}, wantChanged: true},
		{name: "already owned", refs: []metav1.OwnerReference{owner}, want: []metav1.OwnerReference{owner}},
		{name: "owned by an earlier role of the name", refs: []metav1.OwnerReference{earlier}, want: []metav1.OwnerReference{owner}, wantChanged: true},
		{name: "another owner is kept", refs: []metav1.OwnerReference{other}, want: []metav1.OwnerReference{owner, other}, wantChanged: true},
		{name: "owned, and by another", refs: []metav1.OwnerReference{other, owner}, want: []metav1.OwnerReference{owner, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			refs, changed := withOwner(tc.refs, owner)
			g.Expect(refs).To(Equal(tc.want))
			g.Expect(changed).To(Equal(tc.wantChanged))
		})
	}
}

// TestOwnedRegistration checks that the Rotator registers the APIService
// only while its owner exists, owned by it, gives an APIService it finds
// (make deploy's) the owner, and the owner's successor after the role was
// recreated, and writes nothing when all is in place. envtest runs no
// garbage collector: test/e2e sees the APIService go with its owner.
func TestOwnedRegistration(t *testing.T) {
	cfg := controlplane.Start(t)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	g := NewWithT(t)
	ctx := context.Background()
	ns := createNamespace(t, c)
	r := &Rotator{Client: c, Reader: c, Namespace: ns, SecretName: secretName, APIService: apiServiceName, Service: serviceName,
		Owner: OwnerClusterRole, Lifetimes: lifetimes, Now: func() time.Time { return start }, Log: logr.Discard()}

	_, err = r.Ensure(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("ClusterRole echo-operator-echo-viewer-role, which owns the live API's APIService, does not exist")))
	err = c.Get(ctx, client.ObjectKey{Name: apiServiceName}, EmptyAPIService())
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is registered without its owner: %v", err)

	role := createOwner(g, c)
	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, apiService := read(g, c, ns)
	g.Expect(apiService.GetOwnerReferences()).To(ConsistOf(roleRef(role)))
	// kube-apiserver writes the APIService's status meanwhile: count the
	// Rotator's writes rather than compare resource versions.
	var writes atomic.Int32
	counted := *r
	counted.Client = interceptor.NewClient(c, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			writes.Add(1)
			return c.Patch(ctx, obj, patch, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes.Add(1)
			return c.Update(ctx, obj, opts...)
		},
	})
	_, err = counted.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(writes.Load()).To(BeZero(), "nothing is written when the owner is in place")

	// One found without an owner, as config/liveapi applies it.
	apiService.SetOwnerReferences(nil)
	g.Expect(c.Update(ctx, apiService)).To(Succeed())
	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, apiService = read(g, c, ns)
	g.Expect(apiService.GetOwnerReferences()).To(ConsistOf(roleRef(role)))

	// The role recreated (an install over an earlier one): its successor owns it.
	g.Expect(c.Delete(ctx, role)).To(Succeed())
	successor := createOwner(g, c)
	_, err = r.Ensure(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, apiService = read(g, c, ns)
	g.Expect(apiService.GetOwnerReferences()).To(ConsistOf(roleRef(successor)))
	g.Expect(c.Delete(ctx, apiService)).To(Succeed())
	g.Expect(c.Delete(ctx, successor)).To(Succeed())
}

func createOwner(g Gomega, c client.Client) *rbacv1.ClusterRole {
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: OwnerClusterRole}}
	g.Expect(c.Create(context.Background(), role)).To(Succeed())
	return role
}

func roleRef(role *rbacv1.ClusterRole) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: role.Name, UID: role.UID}
}

// TestOwnerIsInEveryInstall checks that the role named OwnerClusterRole
// is the viewer role both installs create under that name: the bundle's
// manifest, and config/rbac's under config/base's name prefix.
func TestOwnerIsInEveryInstall(t *testing.T) {
	g := NewWithT(t)
	root := reporoot.Must(t)
	bundled, err := os.ReadFile(filepath.Join(root, "bundle", "manifests", OwnerClusterRole+"_rbac.authorization.k8s.io_v1_clusterrole.yaml"))
	g.Expect(err).NotTo(HaveOccurred(), "the bundle holds the role, which OLM v0 labels with its CSV and OLM v1 owns")
	g.Expect(string(bundled)).To(ContainSubstring("name: " + OwnerClusterRole + "\n"))
	base, err := os.ReadFile(filepath.Join(root, "config", "base", "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(base)).To(ContainSubstring("namePrefix: echo-operator-\n"))
	viewer, err := os.ReadFile(filepath.Join(root, "config", "rbac", "echo_viewer_role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(viewer)).To(ContainSubstring("kind: ClusterRole\n"))
	g.Expect(string(viewer)).To(ContainSubstring("name: " + strings.TrimPrefix(OwnerClusterRole, "echo-operator-") + "\n"))
}
