package events

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/echo-operator/echo-operator/test/harness/controlplane"

	echov1alpha1 "github.com/echo-operator/echo-operator/api/v1alpha1"
)

const (
	timeout  = 30 * time.Second
	interval = 50 * time.Millisecond
)

func TestEventsAPI(t *testing.T) {
	cfg := controlplane.Start(t)
	t.Run("an Event lands in events.k8s.io/v1, its repeats in its series", func(t *testing.T) {
		testEventsLandAsSeries(t, cfg)
	})
	t.Run("a note longer than the API server accepts is cut", func(t *testing.T) {
		testLongNotesLandCut(t, cfg)
	})
}

// An Event lands in the events.k8s.io/v1 API with the operator's fields,
// and repeating it makes a series of the first Event rather than a new one.
func testEventsLandAsSeries(t *testing.T, cfg *rest.Config) {
	g := NewWithT(t)
	clientset := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	ns, err := clientset.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "events-"}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	b, err := NewBroadcaster(cfg, testScheme(), logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(b.Stop)
	rec := b.NewRecorder(echov1alpha1.EventAction)
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns.Name, Name: "web", UID: "5f0c6f5e-8a2b-4c1e-9d3a-2b7e4f1a6c90", ResourceVersion: "42",
	}}
	list := func(g Gomega) []eventsv1.Event {
		evs, err := clientset.EventsV1().Events(ns.Name).List(ctx, metav1.ListOptions{
			FieldSelector: "regarding.name=web,reason=" + echov1alpha1.EventReasonReady,
		})
		g.Expect(err).NotTo(HaveOccurred())
		return evs.Items
	}
	record := func() {
		rec.Eventf(echo, corev1.EventTypeNormal, echov1alpha1.EventReasonReady, "Generation %d is Ready: 1 of 1 replicas available", 2)
	}
	hostname, err := os.Hostname()
	g.Expect(err).NotTo(HaveOccurred())

	record()
	var first eventsv1.Event
	g.Eventually(func(g Gomega) {
		evs := list(g)
		g.Expect(evs).To(HaveLen(1))
		first = evs[0]
	}, timeout, interval).Should(Succeed())
	g.Expect(first.Type).To(Equal(corev1.EventTypeNormal))
	g.Expect(first.Reason).To(Equal(echov1alpha1.EventReasonReady))
	g.Expect(first.Note).To(Equal("Generation 2 is Ready: 1 of 1 replicas available"))
	g.Expect(first.Action).To(Equal(echov1alpha1.EventActionCheckingReadiness))
	g.Expect(first.ReportingController).To(Equal(ReportingController))
	g.Expect(first.ReportingInstance).To(Equal(ReportingController + "-" + hostname))
	g.Expect(first.EventTime.IsZero()).To(BeFalse())
	g.Expect(first.Series).To(BeNil())
	g.Expect(first.Regarding).To(Equal(corev1.ObjectReference{
		APIVersion: "echo.dev/v1alpha1", Kind: "Echo",
		Namespace: ns.Name, Name: "web", UID: echo.UID, ResourceVersion: "42",
	}))

	// The second occurrence turns the Event into a series of two; later
	// ones are counted in it too (client-go writes the count on to the
	// API server every 30 minutes and when the series ends), and none
	// makes another Event.
	record()
	g.Eventually(func(g Gomega) {
		evs := list(g)
		g.Expect(evs).To(HaveLen(1))
		g.Expect(evs[0].Name).To(Equal(first.Name))
		g.Expect(evs[0].Series).NotTo(BeNil())
		g.Expect(evs[0].Series.Count).To(BeEquivalentTo(2))
		g.Expect(evs[0].Note).To(Equal(first.Note))
	}, timeout, interval).Should(Succeed())
	record()
	record()
	g.Consistently(func(g Gomega) {
		evs := list(g)
		g.Expect(evs).To(HaveLen(1))
		g.Expect(evs[0].Name).To(Equal(first.Name))
	}, time.Second, interval).Should(Succeed())
}

// A note longer than the API server accepts is cut, not refused with its
// Event.
func testLongNotesLandCut(t *testing.T, cfg *rest.Config) {
	g := NewWithT(t)
	clientset := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	b, err := NewBroadcaster(cfg, testScheme(), logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(b.Stop)
	rec := b.NewRecorder(echov1alpha1.EventAction)
	echo := &echov1alpha1.Echo{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "long", UID: "uid-long"}}

	message := "Upgrading the release failed: "
	for len(message) < 3*noteLimit {
		message += "a rendered object was refused; "
	}
	rec.Event(echo, corev1.EventTypeWarning, echov1alpha1.EventReasonReleaseUpgradeFailed, message)
	g.Eventually(func(g Gomega) {
		evs, err := clientset.EventsV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=long"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(evs.Items).To(HaveLen(1))
		g.Expect(evs.Items[0].Note).To(HavePrefix("Upgrading the release failed: a rendered object was refused"))
		g.Expect(len(evs.Items[0].Note)).To(BeNumerically("<=", noteLimit))
	}, timeout, interval).Should(Succeed())
}

func testScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(echov1alpha1.AddToScheme(s))
	return s
}
