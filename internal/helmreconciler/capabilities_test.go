package helmreconciler

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestCapabilitiesCache(t *testing.T) {
	g := NewWithT(t)
	dc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{},
		FakedServerVersion: &version.Info{GitVersion: "v1.35.4", Major: "1", Minor: "35"}}
	dc.Resources = []*metav1.APIResourceList{{GroupVersion: "apps/v1"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCapabilitiesCache(dc)
	c.now = func() time.Time { return now }
	discoveries := func() int {
		n := 0
		for _, a := range dc.Actions() {
			if a.GetResource().Resource == "version" {
				n++
			}
		}
		return n
	}

	caps, err := c.get()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(caps.KubeVersion.Version).To(Equal("v1.35.4"))
	g.Expect(caps.APIVersions.Has("apps/v1")).To(BeTrue())
	g.Expect(discoveries()).To(Equal(1))

	// Within the TTL, the same answer without asking; each caller gets
	// its own copy.
	caps.APIVersions = nil
	now = now.Add(capabilitiesTTL - time.Second)
	again, err := c.get()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.APIVersions.Has("apps/v1")).To(BeTrue())
	g.Expect(discoveries()).To(Equal(1))

	// Past it, an API installed since shows.
	dc.Resources = append(dc.Resources, &metav1.APIResourceList{GroupVersion: "monitoring.coreos.com/v1"})
	now = now.Add(time.Second)
	later, err := c.get()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(later.APIVersions.Has("monitoring.coreos.com/v1")).To(BeTrue())
	g.Expect(discoveries()).To(Equal(2))
}
