package events

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	k8sevents "k8s.io/client-go/tools/events"
)

// ReportingController is the reportingController of the operator's
// Events; their reportingInstance is ReportingController-<hostname>, the
// pod's name in a cluster.
const ReportingController = "echo-operator"

// Broadcaster writes the Events of its recorders to the API server, from
// its creation until Stop.
type Broadcaster struct {
	broadcaster k8sevents.EventBroadcaster
	recorder    k8sevents.EventRecorder
	cancel      context.CancelFunc
	stopOnce    sync.Once
}

// NewBroadcaster starts a broadcaster writing to the events.k8s.io/v1 API
// of the cluster of cfg. Objects are referred to by their kinds in scheme.
// Events that cannot be written are logged to log, and every Event at
// V(1).
func NewBroadcaster(cfg *rest.Config, scheme *runtime.Scheme, log logr.Logger) (*Broadcaster, error) {
	client, err := eventsv1client.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the events.k8s.io/v1 client: %w", err)
	}
	return newBroadcaster(&k8sevents.EventSinkImpl{Interface: client}, scheme, log)
}

func newBroadcaster(sink k8sevents.EventSink, scheme *runtime.Scheme, log logr.Logger) (*Broadcaster, error) {
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), log))
	b := k8sevents.NewBroadcaster(sink)
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		cancel()
		b.Shutdown()
		return nil, fmt.Errorf("starting to write Events: %w", err)
	}
	if _, err := b.StartLogging(log.V(1)); err != nil {
		cancel()
		b.Shutdown()
		return nil, fmt.Errorf("starting to log Events: %w", err)
	}
	return &Broadcaster{
		broadcaster: b,
		recorder:    b.NewRecorder(scheme, ReportingController).WithLogger(log),
		cancel:      cancel,
	}, nil
}

// Stop stops the broadcaster and its goroutines. Events recorded
// afterwards are dropped, and those still being written may be lost.
func (b *Broadcaster) Stop() {
	b.stopOnce.Do(func() {
		b.broadcaster.Shutdown()
		b.cancel()
	})
}

// NewRecorder returns a recorder whose Events carry the action
// actionOf(reason).
func (b *Broadcaster) NewRecorder(actionOf func(reason string) string) *Recorder {
	return &Recorder{recorder: b.recorder, actionOf: actionOf}
}
