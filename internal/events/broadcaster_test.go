package events

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
)

// fakeSink keeps the Events created through it.
type fakeSink struct {
	mu      sync.Mutex
	created []*eventsv1.Event
}

func (s *fakeSink) Create(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.created = append(s.created, ev.DeepCopy())
	return ev, nil
}

func (s *fakeSink) Update(_ context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	return ev, nil
}

func (s *fakeSink) Patch(_ context.Context, ev *eventsv1.Event, _ []byte) (*eventsv1.Event, error) {
	return ev, nil
}

func (s *fakeSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.created)
}

// The broadcaster writes from its creation, and Stop ends every goroutine
// it started: a stopped manager leaves nothing running.
func TestBroadcasterStopEndsItsGoroutines(t *testing.T) {
	g := NewWithT(t)
	before := runtime.NumGoroutine()
	sink := &fakeSink{}
	b, err := newBroadcaster(sink, scheme.Scheme, logr.Discard())
	g.Expect(err).NotTo(HaveOccurred())
	rec := b.NewRecorder(func(string) string { return "Testing" })
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "uid-1"}}

	rec.Event(obj, corev1.EventTypeNormal, "Tested", "before Stop")
	g.Eventually(sink.count, 10*time.Second, 10*time.Millisecond).Should(Equal(1))

	b.Stop()
	b.Stop() // idempotent
	rec.Event(obj, corev1.EventTypeNormal, "Stopped", "after Stop: dropped")
	g.Eventually(runtime.NumGoroutine, 10*time.Second, 10*time.Millisecond).Should(BeNumerically("<=", before))
	g.Expect(sink.count()).To(Equal(1))
}
