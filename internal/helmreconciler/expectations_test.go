package helmreconciler

import (
	"context"
	"errors"
	"testing"

	"github.com/go-logr/logr"
	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

func TestExpectations(t *testing.T) {
	e := newExpectations()
	if !e.seen("uid/web", 1) {
		t.Error("a release this process never wrote is trusted as cached")
	}

	e.expect("uid/web", 3)
	e.expect("uid/web", 2) // an older write reported late does not lower it
	if e.seen("uid/web", 2) {
		t.Error("a cache that still shows revision 2 is trusted after revision 3 was written")
	}
	if !e.seen("uid/api", 1) {
		t.Error("another release is held back")
	}
	if !e.seen("uid/web", 3) {
		t.Error("the cache shows revision 3 and is not trusted")
	}
	if !e.seen("uid/web", 1) {
		t.Error("the expectation is kept after it was met")
	}

	e.expect("uid/web", 5)
	e.forget("uid/web")
	if !e.seen("uid/web", 1) {
		t.Error("a forgotten release is held back")
	}
}

// goneHelm is Helm's action client for a release that is gone.
type goneHelm struct{ helmclient.ActionInterface }

func (goneHelm) ActionClientFor(context.Context, client.Object) (helmclient.ActionInterface, error) {
	return goneHelm{}, nil
}

func (goneHelm) Uninstall(string, ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	return nil, driver.ErrReleaseNotFound
}

// A release found gone on uninstall forgets the revisions expected of it:
// a failed install Helm's client uninstalled wrote one the cache may
// never show.
func TestUninstallOfAGoneReleaseForgetsItsExpectations(t *testing.T) {
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u"}}
	g := &actionClientGetter{inner: goneHelm{}, expected: newExpectations(), recorder: record.NewFakeRecorder(10), log: logr.Discard()}
	c := &actionClient{ctx: context.Background(), obj: echo, g: g}
	g.expected.expect(c.releaseKey("web"), 1)

	if _, err := c.Uninstall("web"); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Fatalf("uninstall: %v, want not found", err)
	}
	if g.expected.pending(c.releaseKey("web")) {
		t.Error("the gone release's revision is still expected")
	}
}
